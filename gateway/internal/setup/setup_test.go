package setup_test

import (
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// TestAuthOptions: every field of the auth section reaches package auth,
// with the defaults the configuration applied, and the defaults of both
// agree.
func TestAuthOptions(t *testing.T) {
	t.Parallel()
	yaml := `servers: {s: {command: x}}
auth:
  tokens: [{principal: alice, sha256: "sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}]
  oauth:
    issuer: https://auth.example.com
    resource: https://mcp.example.com/mcp
    algorithms: [ES256]
    scopes: [mcp]
    jwksMinInterval: 1m
`
	cfg, err := config.Parse("gateway.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	o := setup.AuthOptions(cfg.Auth, "127.0.0.1:8080")
	if o.Addr != "127.0.0.1:8080" || len(o.Tokens) != 1 || o.Tokens[0].Principal != "alice" || o.Tokens[0].SHA256 != cfg.Auth.Tokens[0].SHA256 {
		t.Errorf("tokens: %+v", o)
	}
	want := auth.OAuth{
		Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp", Audience: []string{"https://mcp.example.com/mcp"},
		Algorithms: []string{"ES256"}, Scopes: []string{"mcp"}, PrincipalClaim: auth.DefaultPrincipalClaim,
		ClockSkew: auth.DefaultClockSkew, JWKSRefresh: auth.DefaultJWKSRefresh, JWKSMinInterval: time.Minute,
	}
	if o.OAuth == nil || o.OAuth.Issuer != want.Issuer || o.OAuth.Resource != want.Resource || len(o.OAuth.Audience) != 1 ||
		o.OAuth.Audience[0] != want.Audience[0] || len(o.OAuth.Algorithms) != 1 || o.OAuth.Algorithms[0] != "ES256" ||
		len(o.OAuth.Scopes) != 1 || o.OAuth.PrincipalClaim != want.PrincipalClaim || o.OAuth.ClockSkew != want.ClockSkew ||
		o.OAuth.JWKSRefresh != want.JWKSRefresh || o.OAuth.JWKSMinInterval != want.JWKSMinInterval {
		t.Errorf("oauth: %+v, want %+v", o.OAuth, want)
	}
	if config.DefaultClockSkew != auth.DefaultClockSkew || config.DefaultJWKSRefresh != auth.DefaultJWKSRefresh ||
		config.DefaultJWKSMinInterval != auth.DefaultJWKSMinInterval || config.DefaultPrincipalClaim != auth.DefaultPrincipalClaim ||
		config.MaxPrincipalLen != auth.MaxPrincipalLen {
		t.Error("the configuration's auth defaults differ from package auth's")
	}
	if _, err := auth.New(o); err != nil {
		t.Errorf("auth.New: %v", err)
	}
	if o := setup.AuthOptions(config.Auth{}, ""); len(o.Tokens) != 0 || o.OAuth != nil {
		t.Errorf("no auth section: %+v", o)
	}
}
