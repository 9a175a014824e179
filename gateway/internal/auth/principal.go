package auth

import (
	"context"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Method is how a principal was authenticated.
type Method string

// The methods.
const (
	// MethodAnonymous: no authentication, on a loopback listener without
	// auth configured, or over stdio (the user who started the gateway).
	MethodAnonymous Method = "anonymous"
	// MethodToken: a static bearer token of auth.tokens.
	MethodToken Method = "token"
	// MethodOAuth: an OAuth 2.1 access token (a JWT) of auth.oauth.
	MethodOAuth Method = "oauth"
)

// Principal is who is calling. Its fields are read-only: several requests
// may share one.
type Principal struct {
	// Name identifies the principal: a static token's principal, or the
	// value of an OAuth token's principal claim (sub by default). Both
	// kinds share one namespace. Empty when anonymous.
	Name string
	// Method is how the principal was authenticated.
	Method Method
	// Scopes are an OAuth token's scopes.
	Scopes []string
	// Expires is when an OAuth token expires; zero otherwise.
	Expires time.Time
	// Claims are an OAuth token's claims as decoded JSON; nil otherwise.
	Claims map[string]any
}

// Anonymous reports whether p was not authenticated.
func (p Principal) Anonymous() bool { return p.Method == MethodAnonymous }

// String returns p's name, or "anonymous".
func (p Principal) String() string {
	if p.Anonymous() {
		return string(MethodAnonymous)
	}
	return p.Name
}

// anonymous is the principal of unauthenticated requests.
var (
	anonymous   = &Principal{Method: MethodAnonymous}
	anonymousID = &identity{p: anonymous}
)

// identity is what the middleware puts in a request's context.
type identity struct {
	p    *Principal
	info *sdkauth.TokenInfo // nil when anonymous
}

type contextKey struct{}

// tokenInfoKey holds the *Principal in auth.TokenInfo.Extra.
const tokenInfoKey = "preflight/principal"

func newContext(ctx context.Context, id *identity) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// FromContext returns the principal that [Authenticator.Middleware] found
// for the request whose context ctx is (or derives from). ok is false when
// the request did not go through the middleware: treat that as a
// programming error, never as anonymous.
func FromContext(ctx context.Context) (p Principal, ok bool) {
	id, ok := ctx.Value(contextKey{}).(*identity)
	if !ok {
		return Principal{}, false
	}
	return *id.p, true
}

// FromRequest returns the principal of an MCP request, for MCP handlers
// and middleware; ctx is the handler's context. An authenticated request
// carries its principal in req.Extra.TokenInfo (set per request, so a
// legacy session's requests each have their own); an anonymous one has
// no TokenInfo and the anonymous principal in ctx. A request that did not
// come over HTTP (stdio, in memory) is anonymous: its caller is the user
// who started the gateway. ok is false for an HTTP request that did not
// go through [Authenticator.Middleware].
func FromRequest(ctx context.Context, req mcp.Request) (p Principal, ok bool) {
	extra := req.GetExtra()
	if extra != nil && extra.TokenInfo != nil {
		if p, ok := extra.TokenInfo.Extra[tokenInfoKey].(*Principal); ok {
			return *p, true
		}
		return Principal{}, false
	}
	if p, ok := FromContext(ctx); ok {
		if p.Anonymous() {
			return p, true
		}
		return Principal{}, false // authenticated, yet no TokenInfo
	}
	if extra == nil || extra.Header == nil {
		return *anonymous, true
	}
	return Principal{}, false
}

// tokenInfo returns the SDK's TokenInfo for p.
func tokenInfo(p *Principal) *sdkauth.TokenInfo {
	return &sdkauth.TokenInfo{
		Scopes:     p.Scopes,
		Expiration: p.Expires,
		UserID:     p.Name,
		Extra:      map[string]any{tokenInfoKey: p},
	}
}
