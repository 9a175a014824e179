package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAuthDefaults checks the defaults of the auth section and that a
// token's hash is kept in one spelling.
func TestAuthDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "c.yaml", `
listen: {http: "0.0.0.0:8080"}
servers: {s: {command: x}}
auth:
  tokens:
    - {principal: alice, sha256: "sha256:6B86B273FF34FCE19D6B804EFF5A3F5747ADA4EAA22F1D49C01E52DDB7875B4B"}
  oauth:
    issuer: https://auth.example.com
    resource: https://mcp.example.com/mcp
`)
	want := Auth{
		Tokens: []Token{{Principal: "alice", SHA256: "sha256:6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"}},
		OAuth: OAuth{
			Issuer:          "https://auth.example.com",
			Resource:        "https://mcp.example.com/mcp",
			Audience:        []string{"https://mcp.example.com/mcp"},
			Algorithms:      []Algorithm{RS256, ES256, EdDSA},
			PrincipalClaim:  "sub",
			ClockSkew:       Duration(30 * time.Second),
			JWKSRefresh:     Duration(time.Hour),
			JWKSMinInterval: Duration(30 * time.Second),
		},
	}
	if !reflect.DeepEqual(c.Auth, want) {
		t.Errorf("auth = %+v\nwant %+v", c.Auth, want)
	}
	if c.Auth.IsZero() || (Auth{}).IsZero() == false || !(OAuth{}).IsZero() {
		t.Error("IsZero")
	}

	// Without auth, the gateway is anonymous: Marshal writes no auth.
	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\n")
	if !c.Auth.IsZero() {
		t.Errorf("auth = %+v", c.Auth)
	}
	if out, _ := Marshal(c); strings.Contains(string(out), "auth") {
		t.Errorf("Marshal wrote an auth section:\n%s", out)
	}
}

// TestAuthListen checks that serving without authentication is allowed on
// loopback addresses only, and with authentication on any.
func TestAuthListen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.8.9.10:1", true},
		{"[::1]:8080", true},
		{"localhost:0", true},
		{"LOCALHOST:80", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"[::]:8080", false},
		{"192.168.1.2:80", false},
		{"gateway.internal:80", false},
		{"localhost.example.com:80", false},
	} {
		text := "listen: {http: \"" + tc.addr + "\"}\nservers: {s: {command: x}}\n"
		_, err := Parse("c.yaml", []byte(text), testEnv)
		if (err == nil) != tc.ok {
			t.Errorf("%s without auth: %v, want ok %v", tc.addr, err, tc.ok)
		}
		text += "auth: {tokens: [{principal: a, sha256: \"sha256:" + strings.Repeat("ab", 32) + "\"}]}\n"
		if _, err := Parse("c.yaml", []byte(text), testEnv); err != nil {
			t.Errorf("%s with auth: %v", tc.addr, err)
		}
	}
}

// TestAuthURLs checks the URLs of the oauth section: https, or http on a
// loopback host only, and never repeated in errors.
func TestAuthURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		issuer string
		want   string // "" when accepted
	}{
		{"https://auth.example.com/realms/a", ""},
		{"http://127.0.0.1:9000", ""},
		{"http://localhost:9000/tenant", ""},
		{"http://[::1]:9000", ""},
		{"http://auth.example.com", "not an https:// URL (http:// is allowed only for a loopback host"},
		{"https://auth.example.com/?tenant=secret", "an issuer identifier has no query"},
		{"https://auth.example.com/#secret", "no fragment"},
		{"https://secret@auth.example.com/", "holds no user or password"},
		{"auth.example.com/secret", "not an https:// URL with a host"},
		{"ftp://auth.example.com/secret", "not an https:// URL (http://"},
	} {
		text := "servers: {s: {command: x}}\nauth: {oauth: {issuer: \"" + tc.issuer + "\", resource: \"https://mcp.example.com/mcp\"}}\n"
		_, err := Parse("c.yaml", []byte(text), testEnv)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.issuer, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.issuer, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%s: the error repeats the URL: %v", tc.issuer, err)
		}
	}
}

// TestAuthLimits checks the bounds on the auth section's lists and names.
func TestAuthLimits(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("servers: {s: {command: x}}\nauth:\n  tokens:\n")
	for i := range MaxTokens + 1 {
		fmt.Fprintf(&b, "    - {principal: p, sha256: \"sha256:%064x\"}\n", i)
	}
	_, err := Parse("c.yaml", []byte(b.String()), testEnv)
	if err == nil || !strings.Contains(err.Error(), "auth.tokens: 1001 tokens: at most 1000") {
		t.Errorf("1001 tokens: %v", err)
	}
	long := strings.Repeat("é", MaxPrincipalLen+1)
	_, err = Parse("c.yaml", []byte("servers: {s: {command: x}}\nauth: {tokens: [{principal: "+long+", sha256: \"sha256:"+strings.Repeat("ab", 32)+"\"}]}\n"), testEnv)
	if err == nil || !strings.Contains(err.Error(), "a principal has 1 to 128 characters") {
		t.Errorf("long principal: %v", err)
	}
	ok := mustParse(t, "c.yaml", "servers: {s: {command: x}}\nauth: {tokens: [{principal: "+long[:2*MaxPrincipalLen]+", sha256: \"sha256:"+strings.Repeat("ab", 32)+"\"}]}\n")
	if got := ok.Auth.Tokens[0].Principal; got != strings.Repeat("é", MaxPrincipalLen) {
		t.Errorf("principal %q", got)
	}
	c := mustParse(t, "c.yaml", `
servers: {s: {command: x}}
auth:
  oauth:
    issuer: https://a.example.com
    resource: https://m.example.com
    audience: [api://gateway, https://m.example.com]
    algorithms: [ES384, PS256]
    scopes: ["mcp:tools", "read"]
    clockSkew: 5m
    jwksRefresh: 10m
    jwksMinInterval: 10m
`)
	if o := c.Auth.OAuth; !slices.Equal(o.Audience, []string{"api://gateway", "https://m.example.com"}) || !slices.Equal(o.Algorithms, []Algorithm{ES384, PS256}) ||
		o.ClockSkew != Duration(5*time.Minute) || o.JWKSMinInterval != o.JWKSRefresh {
		t.Errorf("oauth = %+v", o)
	}
}
