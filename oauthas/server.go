package main

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/storage"
	"golang.org/x/crypto/bcrypt"
)

// The pre-registered clients; gateway/internal/testrig/oauthas names them
// too.
const (
	publicClient       = "preflight-public"
	confidentialClient = "preflight-confidential"
	confidentialSecret = "confidential-client-secret"
	resourceClient     = "preflight-resource"
	resourceSecret     = "resource-server-secret"
)

const (
	// redirectURI is the clients' redirect URI, on any loopback port (RFC
	// 8252): the gateway's page at /ui.
	redirectURI = "http://127.0.0.1/ui/connections/callback"
	// scope is the scope of the protected MCP server; offline_access is
	// offered too.
	scope = "mcp:tools"
	// userCookie names the cookie that says who logs in at the authorize
	// endpoint.
	userCookie = "oauthas_user"
)

// maxRecords bounds what the server records for tests: the resource
// parameters, the subjects, and the grants of each subject (the oldest
// are forgotten first).
const maxRecords = 1000

// server is the authorization server and what it records for tests.
type server struct {
	issuer   string
	provider fosite.OAuth2Provider
	ttl      *lifespans

	mu        sync.Mutex
	refreshes map[string]int     // subject -> refresh grants
	issued    map[string][]grant // subject -> refresh tokens issued
	resources []string           // resource parameters of authorizations
}

// grant is a refresh token and the client it was issued to.
type grant struct{ client, refreshToken string }

// lifespans are the access tokens' lifespans, by the grant they come from.
type lifespans struct{ fromCode, fromRefresh atomic.Int64 }

func newServer(issuer string) (*server, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	cfg := &fosite.Config{
		AccessTokenLifespan:  time.Hour,
		RefreshTokenLifespan: 24 * time.Hour,
		GlobalSecret:         secret,
		EnforcePKCE:          true,
		HashCost:             bcrypt.MinCost,
		ScopeStrategy:        fosite.ExactScopeStrategy,
	}
	s := &server{issuer: issuer, ttl: &lifespans{}, refreshes: map[string]int{}, issued: map[string][]grant{}}
	s.ttl.fromCode.Store(int64(time.Hour))
	s.ttl.fromRefresh.Store(int64(time.Hour))
	store := storage.NewMemoryStore()
	for _, c := range []*fosite.DefaultClient{
		{ID: publicClient, Public: true},
		{ID: confidentialClient, Secret: []byte(confidentialSecret)},
	} {
		c.RedirectURIs = []string{redirectURI}
		c.ResponseTypes = []string{"code"}
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
		c.Scopes = []string{scope, "offline_access"}
		store.Clients[c.ID] = &client{DefaultClient: c, ttl: s.ttl}
	}
	// The resource server's client may only introspect: it has no grant.
	store.Clients[resourceClient] = &fosite.DefaultClient{ID: resourceClient, Secret: []byte(resourceSecret)}
	for _, c := range store.Clients {
		if err := hashSecret(c); err != nil {
			return nil, err
		}
	}
	s.provider = compose.Compose(cfg, store, &compose.CommonStrategy{CoreStrategy: compose.NewOAuth2HMACStrategy(cfg)},
		compose.OAuth2AuthorizeExplicitFactory, compose.OAuth2RefreshTokenGrantFactory, compose.OAuth2PKCEFactory,
		compose.OAuth2TokenIntrospectionFactory, compose.OAuth2TokenRevocationFactory)
	return s, nil
}

// hashSecret replaces a confidential client's secret with its bcrypt hash,
// the form fosite compares with.
func hashSecret(c fosite.Client) error {
	d := defaultClient(c)
	if d.Public {
		return nil
	}
	hash, err := bcrypt.GenerateFromPassword(d.Secret, bcrypt.MinCost)
	d.Secret = hash
	return err
}

func defaultClient(c fosite.Client) *fosite.DefaultClient {
	if w, ok := c.(*client); ok {
		return w.DefaultClient
	}
	return c.(*fosite.DefaultClient)
}

// client is a fosite client whose access tokens live as long as the
// server says at the time.
type client struct {
	*fosite.DefaultClient
	ttl *lifespans
}

func (c *client) GetEffectiveLifespan(gt fosite.GrantType, tt fosite.TokenType, fallback time.Duration) time.Duration {
	switch {
	case tt != fosite.AccessToken:
		return fallback
	case gt == fosite.GrantTypeRefreshToken:
		return time.Duration(c.ttl.fromRefresh.Load())
	default:
		return time.Duration(c.ttl.fromCode.Load())
	}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /oauth2/auth", s.authorize)
	mux.HandleFunc("POST /oauth2/token", s.token)
	mux.HandleFunc("POST /oauth2/revoke", s.revoke)
	mux.HandleFunc("POST /oauth2/introspect", s.introspect)
	mux.HandleFunc("POST /test/access-ttl", s.setAccessTTL)
	mux.HandleFunc("GET /test/refreshes", s.refreshCounts)
	mux.HandleFunc("GET /test/resources", s.resourcesSeen)
	mux.HandleFunc("POST /test/revoke", s.revokeSubject)
	return mux
}

func (s *server) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer":                                s.issuer,
		"authorization_endpoint":                s.issuer + "/oauth2/auth",
		"token_endpoint":                        s.issuer + "/oauth2/token",
		"revocation_endpoint":                   s.issuer + "/oauth2/revoke",
		"introspection_endpoint":                s.issuer + "/oauth2/introspect",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      []string{scope, "offline_access"},
	})
}

// authorize grants what was asked to the browser's user at once.
func (s *server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	c, err := r.Cookie(userCookie)
	if err != nil || c.Value == "" {
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("Nobody is logged in."))
		return
	}
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc)
	}
	s.mu.Lock()
	s.resources = appendBounded(s.resources, r.URL.Query().Get("resource"))
	s.mu.Unlock()
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: c.Value, Username: c.Value})
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// token grants tokens for a code or a refresh token, counting refreshes.
func (s *server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := s.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	subject := ar.GetSession().GetSubject()
	s.mu.Lock()
	_, known := s.issued[subject]
	if known || len(s.issued) < maxRecords {
		if ar.GetGrantTypes().ExactOne("refresh_token") {
			s.refreshes[subject]++
		}
		if rt, ok := resp.ToMap()["refresh_token"].(string); ok && rt != "" {
			s.issued[subject] = appendBounded(s.issued[subject], grant{client: ar.GetClient().GetID(), refreshToken: rt})
		}
	}
	s.mu.Unlock()
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

func (s *server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s.provider.WriteRevocationResponse(ctx, w, s.provider.NewRevocationRequest(ctx, r))
}

// introspect answers for access tokens only: a refresh token is inactive
// to a resource server.
func (s *server) introspect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ir, err := s.provider.NewIntrospectionRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		s.provider.WriteIntrospectionError(ctx, w, err)
		return
	}
	if ir.GetTokenUse() != fosite.AccessToken {
		ir = &fosite.IntrospectionResponse{Active: false}
	}
	s.provider.WriteIntrospectionResponse(ctx, w, ir)
}

// appendBounded appends v, forgetting the oldest beyond maxRecords.
func appendBounded[T any](list []T, v T) []T {
	if len(list) >= maxRecords {
		list = append(list[:0:0], list[len(list)-maxRecords+1:]...)
	}
	return append(list, v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
