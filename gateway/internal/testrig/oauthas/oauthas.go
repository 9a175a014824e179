// Package oauthas gives tests a real OAuth 2.1 authorization server, built
// on fosite, and an MCP server it protects.
//
// The authorization server grants the authorization code with PKCE S256
// (required), refresh tokens (rotated on each use) and revocation (RFC
// 7009) to two pre-registered clients, [PublicClient] and
// [ConfidentialClient], whose redirect URIs are any loopback port at
// [RedirectPath]. Its RFC 8414 metadata is at
// /.well-known/oauth-authorization-server. The authorize endpoint grants at
// once to the person whose browser carries the [UserCookie] (set with
// [AS.LogIn]) and refuses a browser without it. It counts the refresh grants
// of each subject and records the resource indicator of each authorization.
//
// [StartResource] serves an MCP server behind the go-sdk's
// auth.RequireBearerToken, checking each token by introspection at the
// authorization server, with its protected-resource metadata (RFC 9728)
// and one tool, whoami, which answers with the token's subject and scopes.
package oauthas

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/storage"
	"golang.org/x/crypto/bcrypt"
)

// The pre-registered clients.
const (
	PublicClient       = "preflight-public"
	ConfidentialClient = "preflight-confidential"
	ConfidentialSecret = "confidential-client-secret"
)

// RedirectPath is the path of the clients' redirect URI, on any loopback
// port (RFC 8252): the gateway's page at /ui.
const RedirectPath = "/ui/connections/callback"

// Scope is the scope the protected server asks for; offline_access is
// offered too.
const Scope = "mcp:tools"

// UserCookie names the cookie that says who logs in at the authorize
// endpoint.
const UserCookie = "oauthas_user"

// AS is a running authorization server.
type AS struct {
	// URL is its issuer, http://127.0.0.1:PORT.
	URL string

	provider fosite.OAuth2Provider
	ttl      lifespans

	mu        sync.Mutex
	refreshes map[string]int       // subject -> refresh grants
	issued    map[string][]grantOf // subject -> refresh tokens issued
	resources []string             // resource indicators of authorizations
}

type grantOf struct{ client, refreshToken string }

// lifespans are the access tokens' lifespans, by the grant they come from.
type lifespans struct{ fromCode, fromRefresh atomic.Int64 }

// Start serves an authorization server on loopback until the test ends.
// Its access tokens live an hour until [AS.SetAccessTTL].
func Start(t testing.TB) *AS {
	t.Helper()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg := &fosite.Config{
		AccessTokenLifespan:  time.Hour,
		RefreshTokenLifespan: 24 * time.Hour,
		GlobalSecret:         secret,
		EnforcePKCE:          true,
		HashCost:             bcrypt.MinCost,
		ScopeStrategy:        fosite.ExactScopeStrategy,
	}
	store := storage.NewMemoryStore()
	hash, err := bcrypt.GenerateFromPassword([]byte(ConfidentialSecret), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a := &AS{refreshes: map[string]int{}, issued: map[string][]grantOf{}}
	a.SetAccessTTL(time.Hour, time.Hour)
	for _, c := range []*fosite.DefaultClient{
		{ID: PublicClient, Public: true},
		{ID: ConfidentialClient, Secret: hash},
	} {
		c.RedirectURIs = []string{"http://127.0.0.1" + RedirectPath}
		c.ResponseTypes = []string{"code"}
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
		c.Scopes = []string{Scope, "offline_access"}
		store.Clients[c.ID] = &client{DefaultClient: c, ttl: &a.ttl}
	}
	a.provider = compose.Compose(cfg, store, &compose.CommonStrategy{CoreStrategy: compose.NewOAuth2HMACStrategy(cfg)},
		compose.OAuth2AuthorizeExplicitFactory, compose.OAuth2RefreshTokenGrantFactory, compose.OAuth2PKCEFactory,
		compose.OAuth2TokenIntrospectionFactory, compose.OAuth2TokenRevocationFactory)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("GET /oauth2/auth", a.authorize)
	mux.HandleFunc("POST /oauth2/token", a.token)
	mux.HandleFunc("POST /oauth2/revoke", a.revoke)
	ln := listen(t)
	a.URL = "http://" + ln.Addr().String()
	serveOn(t, ln, mux)
	return a
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

// SetAccessTTL sets the lifespans of the access tokens granted from now
// on: those exchanged for a code, and those of a refresh. A short first
// one makes a refresh due without waiting for it.
func (a *AS) SetAccessTTL(fromCode, fromRefresh time.Duration) {
	a.ttl.fromCode.Store(int64(fromCode))
	a.ttl.fromRefresh.Store(int64(fromRefresh))
}

// LogIn makes the browser whose cookies jar keeps log in as subject.
func (a *AS) LogIn(jar http.CookieJar, subject string) {
	u, _ := url.Parse(a.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: UserCookie, Value: subject, Path: "/"}})
}

// Refreshes returns how many refresh grants subject has had.
func (a *AS) Refreshes(subject string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshes[subject]
}

// Resources returns the resource indicators the authorizations named.
func (a *AS) Resources() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.resources)
}

// RevokeSubject revokes every grant of subject at the revocation endpoint,
// as its client would: the refresh tokens and their access tokens.
func (a *AS) RevokeSubject(ctx context.Context, subject string) error {
	a.mu.Lock()
	gs := a.issued[subject]
	delete(a.issued, subject)
	a.mu.Unlock()
	if len(gs) == 0 {
		return fmt.Errorf("oauthas: %q has no grant to revoke", subject)
	}
	for _, g := range gs {
		form := url.Values{"token": {g.refreshToken}, "token_type_hint": {"refresh_token"}}
		if g.client == PublicClient {
			form.Set("client_id", PublicClient)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/oauth2/revoke", strings.NewReader(form.Encode()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if g.client == ConfidentialClient {
			req.SetBasicAuth(ConfidentialClient, ConfidentialSecret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("oauthas: revocation: %s", resp.Status)
		}
	}
	return nil
}

// Introspect checks an access token and returns its subject, scopes and
// expiry.
func (a *AS) Introspect(ctx context.Context, token string) (subject string, scopes []string, expires time.Time, err error) {
	_, ar, err := a.provider.IntrospectToken(ctx, token, fosite.AccessToken, &fosite.DefaultSession{})
	if err != nil {
		return "", nil, time.Time{}, err
	}
	s := ar.GetSession()
	return s.GetSubject(), ar.GetGrantedScopes(), s.GetExpiresAt(fosite.AccessToken), nil
}

func (a *AS) metadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"issuer":                                a.URL,
		"authorization_endpoint":                a.URL + "/oauth2/auth",
		"token_endpoint":                        a.URL + "/oauth2/token",
		"revocation_endpoint":                   a.URL + "/oauth2/revoke",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      []string{Scope, "offline_access"},
	})
}

// authorize grants what was asked to the browser's user at once.
func (a *AS) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := a.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		a.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	c, err := r.Cookie(UserCookie)
	if err != nil || c.Value == "" {
		a.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("Nobody is logged in."))
		return
	}
	for _, s := range ar.GetRequestedScopes() {
		ar.GrantScope(s)
	}
	a.mu.Lock()
	a.resources = append(a.resources, r.URL.Query().Get("resource"))
	a.mu.Unlock()
	resp, err := a.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: c.Value, Username: c.Value})
	if err != nil {
		a.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	a.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// token grants tokens for a code or a refresh token, counting refreshes.
func (a *AS) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := a.provider.NewAccessRequest(ctx, r, &fosite.DefaultSession{})
	if err != nil {
		a.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := a.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		a.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	subject := ar.GetSession().GetSubject()
	a.mu.Lock()
	if ar.GetGrantTypes().ExactOne("refresh_token") {
		a.refreshes[subject]++
	}
	if rt, ok := resp.ToMap()["refresh_token"].(string); ok && rt != "" {
		a.issued[subject] = append(a.issued[subject], grantOf{client: ar.GetClient().GetID(), refreshToken: rt})
	}
	a.mu.Unlock()
	a.provider.WriteAccessResponse(ctx, w, ar, resp)
}

func (a *AS) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a.provider.WriteRevocationResponse(ctx, w, a.provider.NewRevocationRequest(ctx, r))
}

// listen listens on a free loopback port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serveOn serves h on ln until the test ends.
func serveOn(t testing.TB, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("oauthas: %v", err)
		}
	})
}
