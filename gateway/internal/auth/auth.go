package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

// Defaults of [Options] and [OAuth].
const (
	DefaultFetchTimeout    = 10 * time.Second
	DefaultPrincipalClaim  = "sub"
	DefaultClockSkew       = 30 * time.Second
	DefaultJWKSRefresh     = time.Hour
	DefaultJWKSMinInterval = 30 * time.Second
)

// MaxPrincipalLen bounds a static token's principal, in characters.
const MaxPrincipalLen = 128

// MaxTokenBytes bounds a bearer token; a longer one is refused unread.
const MaxTokenBytes = 16 << 10

// WellKnownPath is where protected-resource metadata is served (RFC 9728),
// with the resource's path appended.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Options configures [New]. A nil *Options means the zero value.
type Options struct {
	// Tokens are the static bearer tokens accepted.
	Tokens []Token
	// OAuth, when set, accepts OAuth 2.1 access tokens (JWTs) of one
	// issuer.
	OAuth *OAuth
	// Addr is the address the gateway's HTTP listener is bound to, such as
	// net.Listener.Addr().String(). Without authentication New refuses any
	// address but a loopback one. Empty: not checked here; the middleware
	// checks each request's local address anyway.
	Addr string
	// HTTPClient fetches the issuer's metadata and keys. Nil: a client
	// that follows at most 3 redirects, to https URLs only.
	HTTPClient *http.Client
	// FetchTimeout bounds one fetch of the issuer's metadata and keys.
	// Default [DefaultFetchTimeout].
	FetchTimeout time.Duration
	// Logger receives failed key fetches. Nil: slog.Default().
	Logger *slog.Logger
}

// Token is one static bearer token: who presents it, and its hash.
type Token struct {
	// Principal is the name decisions, approvals and the audit use.
	Principal string
	// SHA256 is "sha256:" and the token's SHA-256 in lower-case hex
	// ([HashToken]).
	SHA256 string
}

// OAuth makes the gateway an OAuth 2.1 resource server that accepts JWT
// access tokens signed by one issuer. Zero durations and an empty claim
// take the defaults above.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier; a token's iss
	// must equal it. Its keys are found from its metadata unless JWKSURL
	// is set.
	Issuer string
	// Resource is the canonical URL of the gateway's MCP endpoint (the
	// protected-resource metadata's resource, RFC 9728).
	Resource string
	// Audience lists the values a token's aud must contain one of;
	// empty means Resource.
	Audience []string
	// JWKSURL is where the issuer's signing keys are; empty means the
	// jwks_uri of its metadata.
	JWKSURL string
	// Algorithms are the asymmetric signature algorithms accepted (JOSE
	// names); empty means RS256, ES256 and EdDSA.
	Algorithms []string
	// Scopes are required of every token, and advertised.
	Scopes []string
	// PrincipalClaim is the claim that names the principal.
	PrincipalClaim string
	// ClockSkew is the tolerance for exp, nbf and iat.
	ClockSkew time.Duration
	// JWKSRefresh is how long fetched keys are used before they are
	// fetched again; JWKSMinInterval bounds how often they are.
	JWKSRefresh, JWKSMinInterval time.Duration
}

// Authenticator authenticates the gateway's clients. It is safe for
// concurrent use; a config reload makes a new one.
type Authenticator struct {
	static    *staticTokens // nil without tokens
	jwt       *jwtVerifier  // nil without oauth
	anonymous bool

	scopes      []string // required of OAuth tokens
	skew        time.Duration
	metadata    *oauthex.ProtectedResourceMetadata
	metadataURL string // where metadata is, with the resource's path
	now         func() time.Time
}

// New returns the Authenticator of opts' tokens and OAuth issuer, or
// [Anonymous] when it names neither.
func New(opts *Options) (*Authenticator, error) {
	if opts == nil || len(opts.Tokens) == 0 && opts.OAuth == nil {
		return Anonymous(opts)
	}
	return newConfigured(opts)
}

// Anonymous returns the authenticator of a gateway without
// authentication: every request is anonymous, and only loopback clients
// are served. An error says that opts.Addr is not a loopback address.
func Anonymous(opts *Options) (*Authenticator, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.Addr != "" && !loopback.Is(opts.Addr) {
		return nil, fmt.Errorf("auth: serving %s without authentication: without auth.tokens or auth.oauth the gateway listens only on a loopback address (127.0.0.1, [::1], localhost)", opts.Addr)
	}
	return &Authenticator{now: time.Now, anonymous: true}, nil
}

func newConfigured(opts *Options) (*Authenticator, error) {
	a := &Authenticator{now: time.Now}
	if len(opts.Tokens) > 0 {
		s, err := newStaticTokens(opts.Tokens)
		if err != nil {
			return nil, err
		}
		a.static = s
	}
	if opts.OAuth != nil {
		if err := a.setOAuth(opts.OAuth, opts); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *Authenticator) setOAuth(o *OAuth, opts *Options) error {
	if !secureURL(o.Issuer) || !secureURL(o.Resource) || o.JWKSURL != "" && !secureURL(o.JWKSURL) {
		return errors.New("auth: oauth.issuer, resource and jwksUrl are https URLs (http only on a loopback host)")
	}
	algs := o.Algorithms
	if len(algs) == 0 {
		algs = []string{"RS256", "ES256", "EdDSA"}
	}
	methods := make([]string, len(algs))
	for i, alg := range algs {
		if !isAsymmetric(alg) {
			return fmt.Errorf("auth: oauth.algorithms: %q is not an asymmetric signature algorithm", alg)
		}
		methods[i] = alg
	}
	def := func(d, v time.Duration) time.Duration {
		if d <= 0 {
			return v
		}
		return d
	}
	a.skew = def(o.ClockSkew, DefaultClockSkew)
	claim := cmp.Or(o.PrincipalClaim, DefaultPrincipalClaim)
	audience := o.Audience
	if len(audience) == 0 {
		audience = []string{o.Resource}
	}
	client := opts.HTTPClient
	if client == nil {
		client = newHTTPClient()
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ks := &keySet{
		client:      client,
		issuer:      o.Issuer,
		configured:  o.JWKSURL,
		refresh:     def(o.JWKSRefresh, DefaultJWKSRefresh),
		minInterval: def(o.JWKSMinInterval, DefaultJWKSMinInterval),
		timeout:     def(opts.FetchTimeout, DefaultFetchTimeout),
		now:         func() time.Time { return a.now() },
		log:         logger,
	}
	a.jwt = &jwtVerifier{
		parser: jwt.NewParser(
			jwt.WithValidMethods(methods),
			jwt.WithIssuer(o.Issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(a.skew),
			jwt.WithTimeFunc(func() time.Time { return a.now() }),
		),
		keys:     ks,
		audience: audience,
		claim:    claim,
		skew:     a.skew,
		now:      func() time.Time { return a.now() },
	}
	a.scopes = o.Scopes
	u, err := url.Parse(o.Resource)
	if err != nil {
		return err
	}
	wk := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: WellKnownPath + strings.TrimSuffix(u.Path, "/"), RawQuery: u.RawQuery}
	if u.Path != "" && u.Path != "/" && strings.HasSuffix(u.Path, "/") {
		wk.Path += "/"
	}
	a.metadataURL = wk.String()
	a.metadata = &oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   []string{o.Issuer},
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
	}
	return nil
}

func isAsymmetric(alg string) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA":
		return true
	}
	return false
}

// Anonymous reports whether clients are not authenticated.
func (a *Authenticator) Anonymous() bool { return a.anonymous }

// MetadataURL returns the URL of the protected-resource metadata, which
// 401 responses name; "" without OAuth.
func (a *Authenticator) MetadataURL() string { return a.metadataURL }

// Middleware returns next behind authentication. A request with a valid
// token reaches next with its [Principal] in the context and, through the
// SDK's [sdkauth.RequireBearerToken], in the TokenInfo MCP handlers get
// as req.Extra.TokenInfo; its Authorization header is removed, so no
// handler can pass it on. Other requests are answered here:
//
//   - no bearer token: 401 with WWW-Authenticate naming the metadata
//     (resource_metadata) and the required scopes;
//   - an invalid token (unknown, expired, wrong audience or issuer, bad
//     signature, disallowed algorithm): 401 with error="invalid_token";
//   - an OAuth token without the required scopes: 403 with
//     error="insufficient_scope";
//   - more than one Authorization header: 400 with error="invalid_request";
//   - the issuer's keys never fetched: 503 with Retry-After.
//
// Without authentication every request is anonymous, and one that arrived
// on a non-loopback address, or names a non-loopback Host (DNS
// rebinding), is refused with 403.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	verified := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if id, ok := ctx.Value(contextKey{}).(*identity); ok && id.info != nil {
			return id.info, nil
		}
		return nil, sdkauth.ErrInvalidToken
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: a.skew})(withoutAuthorization(next))
	plain := withoutAuthorization(next)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.anonymous {
			if !local(r) {
				w.Header().Set("Cache-Control", "no-store")
				http.Error(w, "forbidden: this gateway has no authentication configured, and serves only loopback clients", http.StatusForbidden)
				return
			}
			plain.ServeHTTP(w, r.WithContext(newContext(r.Context(), anonymousID)))
			return
		}
		id, f := a.authenticate(r)
		if f != nil {
			a.challenge(w, f)
			return
		}
		verified.ServeHTTP(w, r.WithContext(newContext(r.Context(), id)))
	})
}

// withoutAuthorization passes next a request without its Authorization
// header.
func withoutAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Authorization"]; ok {
			r = r.WithContext(r.Context()) // a shallow copy, whose header is replaced
			r.Header = r.Header.Clone()
			r.Header.Del("Authorization")
		}
		next.ServeHTTP(w, r)
	})
}

// local reports whether r came to a loopback address of this machine and
// names a loopback host.
func local(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && addr != nil && loopback.Is(addr.String()) && loopback.Is(r.Host)
}

// failure is a refused request: its status and, for WWW-Authenticate, the
// RFC 6750 error code and a description of a few words.
type failure struct {
	status int
	code   string // invalid_request, invalid_token, insufficient_scope, or "" when no token was sent
	desc   string
}

func invalidToken(desc string) *failure {
	return &failure{status: http.StatusUnauthorized, code: "invalid_token", desc: desc}
}

// authenticate finds r's principal.
func (a *Authenticator) authenticate(r *http.Request) (*identity, *failure) {
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0:
		return nil, &failure{status: http.StatusUnauthorized}
	case len(vals) > 1:
		return nil, &failure{status: http.StatusBadRequest, code: "invalid_request", desc: "more than one Authorization header"}
	case len(vals[0]) > MaxTokenBytes+64:
		return nil, invalidToken("the token is too long")
	}
	fields := strings.Fields(vals[0])
	switch {
	case len(fields) == 0 || !strings.EqualFold(fields[0], "Bearer"):
		return nil, &failure{status: http.StatusUnauthorized} // another scheme: no bearer token
	case len(fields) != 2:
		return nil, &failure{status: http.StatusBadRequest, code: "invalid_request", desc: "malformed Authorization header"}
	}
	return a.verify(r.Context(), fields[1])
}

// Verify checks token as [Authenticator.Middleware] checks a bearer
// token (static tokens by hash in constant time; an OAuth token's
// signature, issuer, audience, expiry and required scopes) and returns its
// principal. The error says why in a few words and never holds the token.
// Without authentication every token is refused.
func (a *Authenticator) Verify(ctx context.Context, token string) (*Principal, error) {
	if a.anonymous {
		return nil, errors.New("no authentication is configured")
	}
	id, f := a.verify(ctx, token)
	if f != nil {
		if f.desc == "" {
			return nil, errors.New("the token was refused")
		}
		return nil, errors.New(f.desc)
	}
	return id.p, nil
}

// verify checks a bearer token.
func (a *Authenticator) verify(ctx context.Context, token string) (*identity, *failure) {
	if len(token) > MaxTokenBytes {
		return nil, invalidToken("the token is too long")
	}
	if !b64token(token) {
		return nil, invalidToken("malformed token")
	}
	if a.static != nil {
		if id := a.static.match(token); id != nil {
			return id, nil
		}
	}
	if a.jwt == nil || strings.Count(token, ".") != 2 {
		return nil, invalidToken("unknown token")
	}
	id, f := a.jwt.verify(ctx, token)
	if f != nil {
		return nil, f
	}
	for _, s := range a.scopes {
		if !slices.Contains(id.p.Scopes, s) {
			return nil, &failure{status: http.StatusForbidden, code: "insufficient_scope", desc: "the token lacks a required scope"}
		}
	}
	return id, nil
}

// b64token reports whether s is a b64token of RFC 6750 section 2.1.
func b64token(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0) {
			return false
		}
	}
	return true
}

// challenge answers a refused request.
func (a *Authenticator) challenge(w http.ResponseWriter, f *failure) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if f.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(max(1, int(a.jwt.keys.nextFetch().Seconds()+0.5))))
		http.Error(w, "service unavailable: "+f.desc+"; retry later", f.status)
		return
	}
	var params []string
	if a.metadataURL == "" {
		params = append(params, `realm="preflight"`)
	}
	if f.code != "" {
		params = append(params, `error="`+f.code+`"`)
		if f.desc != "" {
			params = append(params, `error_description="`+f.desc+`"`)
		}
	}
	if len(a.scopes) > 0 && f.code != "invalid_request" {
		params = append(params, `scope="`+strings.Join(a.scopes, " ")+`"`)
	}
	if a.metadataURL != "" {
		params = append(params, `resource_metadata="`+a.metadataURL+`"`)
	}
	h.Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	msg := http.StatusText(f.status)
	if f.desc != "" {
		msg += ": " + f.desc
	} else {
		msg += ": a bearer token is required"
	}
	http.Error(w, strings.ToLower(msg), f.status)
}

// Handle registers on mux the protected-resource metadata (RFC 9728) at
// /.well-known/oauth-protected-resource with the resource's path appended
// (the URL [Authenticator.MetadataURL] returns) and, as the MCP
// authorization spec also allows, at the root one. Without OAuth it
// registers nothing. The metadata is public: mount it outside
// [Authenticator.Middleware].
func (a *Authenticator) Handle(mux *http.ServeMux) {
	if a.metadata == nil {
		return
	}
	h := sdkauth.ProtectedResourceMetadataHandler(a.metadata)
	mux.Handle(WellKnownPath, h)
	u, _ := url.Parse(a.metadataURL)
	if u.Path != WellKnownPath {
		mux.Handle(WellKnownPath+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.EscapedPath() != u.EscapedPath() {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		}))
	}
}
