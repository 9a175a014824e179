package auth

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// oauthGateway starts an issuer publishing keys and a gateway that
// trusts it, with o's settings on top of the defaults.
func oauthGateway(t testing.TB, o OAuth, keys ...testKey) (*issuer, *gateway) {
	t.Helper()
	is := newIssuer(t, keys...)
	o.Issuer = is.srv.URL
	return is, newGateway(t, Options{OAuth: &o})
}

// TestOAuthTokens checks JWTs of each algorithm over HTTP: what is
// accepted and what is refused, with the challenge each refusal carries.
func TestOAuthTokens(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"rsa", "ec", "ed"} {
		t.Run(key(name).alg, func(t *testing.T) {
			t.Parallel()
			k := key(name)
			is, g := oauthGateway(t, OAuth{}, key("rsa"), key("ec"), key("ed"))
			md := `resource_metadata="` + g.a.MetadataURL() + `"`
			refused := func(desc string) string {
				return `Bearer error="invalid_token", error_description="` + desc + `", ` + md
			}

			r := g.get(t, bearer(sign(t, k, is.claims(g.resource))))
			if r.status != http.StatusOK || r.seen.Principal != "alice" || r.seen.Method != MethodOAuth || r.seen.UserID != "alice" ||
				strings.Join(r.seen.Scopes, " ") != "mcp:tools files:read" || r.seen.Authorization != "" {
				t.Fatalf("valid token: %d %+v %s", r.status, r.seen, r.body)
			}

			now := time.Now()
			for _, tc := range []struct {
				name   string
				change func(jwt.MapClaims)
				want   string // "" when accepted
			}{
				{"audience with a trailing slash", func(c jwt.MapClaims) { c["aud"] = g.resource + "/" }, ""},
				{"audience among several", func(c jwt.MapClaims) { c["aud"] = []string{"https://other.example.com", g.resource} }, ""},
				{"expired within the skew", func(c jwt.MapClaims) { c["exp"] = now.Add(-10 * time.Second).Unix() }, ""},
				{"wrong audience", func(c jwt.MapClaims) { c["aud"] = "https://other.example.com/mcp" }, refused("the token is not for this resource (aud)")},
				{"another path's audience", func(c jwt.MapClaims) { c["aud"] = g.resource + "/other" }, refused("the token is not for this resource (aud)")},
				{"no audience", func(c jwt.MapClaims) { delete(c, "aud") }, refused("the token is not for this resource (aud)")},
				{"wrong issuer", func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }, refused("the token is another issuer's (iss)")},
				{"no issuer", func(c jwt.MapClaims) { delete(c, "iss") }, refused("the token lacks a required claim (iss, exp)")},
				{"expired", func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }, refused("the token has expired")},
				{"no expiry", func(c jwt.MapClaims) { delete(c, "exp") }, refused("the token lacks a required claim (iss, exp)")},
				{"not yet valid", func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() }, refused("the token is not valid yet (nbf)")},
				{"issued in the future", func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() }, refused("the token was issued in the future (iat)")},
				{"no subject", func(c jwt.MapClaims) { delete(c, "sub") }, refused("the token has no usable principal claim")},
				{"subject not a string", func(c jwt.MapClaims) { c["sub"] = 42 }, refused("the token has no usable principal claim")},
				{"exp not a number", func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, refused("invalid token")},
			} {
				claims := is.claims(g.resource)
				tc.change(claims)
				r := g.get(t, bearer(sign(t, k, claims)))
				switch {
				case tc.want == "" && r.status != http.StatusOK:
					t.Errorf("%s: %d %q %s", tc.name, r.status, r.challenge, r.body)
				case tc.want != "" && (r.status != http.StatusUnauthorized || r.challenge != tc.want):
					t.Errorf("%s: %d %q, want 401 %q", tc.name, r.status, r.challenge, tc.want)
				}
			}

			// Tampering: another payload under the signature, another signature.
			good := sign(t, k, is.claims(g.resource))
			parts := strings.Split(good, ".")
			other := is.claims(g.resource)
			other["sub"] = "mallory"
			forged := strings.Split(sign(t, key("rogue"), other), ".")
			sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
			sig[len(sig)/2] ^= 1
			for desc, tok := range map[string]string{
				"payload swapped":   parts[0] + "." + forged[1] + "." + parts[2],
				"signature flipped": parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig),
				"signature removed": parts[0] + "." + parts[1] + ".",
			} {
				if r := g.get(t, bearer(tok)); r.status != http.StatusUnauthorized || r.challenge != refused("invalid signature") {
					t.Errorf("%s: %d %q", desc, r.status, r.challenge)
				}
			}
		})
	}
}

// TestOAuthAlgorithms checks that only the configured asymmetric
// algorithms verify: never none, never HMAC keyed with a public key.
func TestOAuthAlgorithms(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{Algorithms: []string{"RS256", "ES256"}}, key("rsa"), key("ec"), key("ed"), key("ec384"))
	claims := is.claims(g.resource)
	notAllowed := `Bearer error="invalid_token", error_description="signature algorithm not allowed", resource_metadata="` + g.a.MetadataURL() + `"`

	// EdDSA and ES384 keys are published, but not allowed here.
	for _, name := range []string{"ed", "ec384"} {
		if r := g.get(t, bearer(sign(t, key(name), claims))); r.status != 401 || r.challenge != notAllowed {
			t.Errorf("%s: %d %q", key(name).alg, r.status, r.challenge)
		}
	}

	// alg none, with and without a kid.
	for _, header := range []string{`{"alg":"none","typ":"JWT"}`, `{"alg":"none","kid":"rsa-1"}`, `{"alg":"NONE","kid":"rsa-1"}`} {
		payload, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SigningString()
		tok := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + strings.Split(payload, ".")[1] + "."
		if r := g.get(t, bearer(tok)); r.status != 401 || r.challenge != notAllowed {
			t.Errorf("%s: %d %q", header, r.status, r.challenge)
		}
	}

	// HS256 keyed with the RSA public key, as published: the classic
	// confusion of a public key with an HMAC secret.
	pub, err := x509.MarshalPKIXPublicKey(key("rsa").signer.Public().(*rsa.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for _, secret := range [][]byte{pemKey, pub, []byte(jwkOf(key("rsa"))["n"].(string))} {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		tok.Header["kid"] = "rsa-1"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		if r := g.get(t, bearer(s)); r.status != 401 || r.challenge != notAllowed {
			t.Errorf("HS256: %d %q", r.status, r.challenge)
		}
	}

	// An RSA key claims ES256: the key does not fit the algorithm.
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = "rsa-1"
	tok.Header["alg"] = "ES256"
	s, _ := tok.SignedString(key("rsa").signer)
	if r := g.get(t, bearer(s)); r.status != 401 {
		t.Errorf("RS256 signature labelled ES256: %d %q", r.status, r.challenge)
	}

	// A critical header extension is not understood.
	tok = jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"], tok.Header["crit"], tok.Header["exp-ext"] = "rsa-1", []string{"exp-ext"}, true
	s, _ = tok.SignedString(key("rsa").signer)
	if r := g.get(t, bearer(s)); r.status != 401 || !strings.Contains(r.challenge, "unsupported critical header") {
		t.Errorf("crit: %d %q", r.status, r.challenge)
	}
}

// TestOAuthScopes checks required scopes: 403 insufficient_scope with the
// scopes to ask for, as the MCP authorization spec describes, and the
// scope claim in either form.
func TestOAuthScopes(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{Scopes: []string{"mcp:tools", "files:read"}}, key("ed"))
	md := `resource_metadata="` + g.a.MetadataURL() + `"`
	for _, tc := range []struct {
		name  string
		claim map[string]any
		ok    bool
	}{
		{"scope string", map[string]any{"scope": "files:read other mcp:tools"}, true},
		{"scp list", map[string]any{"scp": []string{"mcp:tools", "files:read"}}, true},
		{"scp string", map[string]any{"scp": "mcp:tools files:read"}, true},
		{"one missing", map[string]any{"scope": "mcp:tools"}, false},
		{"none", map[string]any{}, false},
		{"a longer scope is not the scope", map[string]any{"scope": "mcp:tools files:read:all"}, false},
	} {
		claims := is.claims(g.resource)
		delete(claims, "scope")
		for k, v := range tc.claim {
			claims[k] = v
		}
		r := g.get(t, bearer(sign(t, key("ed"), claims)))
		want := `Bearer error="insufficient_scope", error_description="the token lacks a required scope", scope="mcp:tools files:read", ` + md
		switch {
		case tc.ok && r.status != http.StatusOK:
			t.Errorf("%s: %d %q", tc.name, r.status, r.challenge)
		case !tc.ok && (r.status != http.StatusForbidden || r.challenge != want):
			t.Errorf("%s: %d %q\nwant 403 %q", tc.name, r.status, r.challenge, want)
		}
	}
	// Without a token, the challenge names the scopes to ask for.
	if r := g.get(t); r.status != 401 || r.challenge != `Bearer scope="mcp:tools files:read", `+md {
		t.Errorf("missing token: %d %q", r.status, r.challenge)
	}
}

// TestMissingToken checks the 401 a client starts from: the SDK's own
// parser reads resource_metadata, and the SDK's client fetches and
// validates the metadata it names.
func TestMissingToken(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{PrincipalClaim: "email"}, key("rsa"))
	r := g.get(t)
	if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "a bearer token is required") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	cs, err := oauthex.ParseWWWAuthenticate([]string{r.challenge})
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" || cs[0].Params["error"] != "" {
		t.Fatalf("challenge %q: %+v %v", r.challenge, cs, err)
	}
	mdURL := cs[0].Params["resource_metadata"]
	if mdURL != strings.Replace(g.resource, "/mcp", WellKnownPath+"/mcp", 1) {
		t.Errorf("resource_metadata %q", mdURL)
	}
	md, err := oauthex.GetProtectedResourceMetadata(context.Background(), mdURL, g.resource, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if md.Resource != g.resource || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != is.srv.URL || md.BearerMethodsSupported[0] != "header" {
		t.Errorf("metadata %+v", md)
	}

	// The principal claim is configurable.
	claims := is.claims(g.resource)
	claims["email"] = "alice@example.com"
	if r := g.get(t, bearer(sign(t, key("rsa"), claims))); r.status != 200 || r.seen.Principal != "alice@example.com" {
		t.Errorf("email claim: %d %+v", r.status, r.seen)
	}
}

// TestVerifiedCache checks the memory of verified tokens: a token is
// remembered, yet refused once it expires; the memory is bounded.
func TestVerifiedCache(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{}, key("ed"))
	claims := is.claims(g.resource)
	claims["exp"] = time.Now().Add(2 * time.Minute).Unix()
	tok := sign(t, key("ed"), claims)
	for range 2 {
		if r := g.get(t, bearer(tok)); r.status != 200 {
			t.Fatalf("%d %q", r.status, r.challenge)
		}
	}
	cached := func() int {
		g.a.jwt.cache.mu.Lock()
		defer g.a.jwt.cache.mu.Unlock()
		return len(g.a.jwt.cache.m)
	}
	if n := cached(); n != 1 {
		t.Errorf("%d tokens remembered, want 1", n)
	}
	g.clock.Advance(2*time.Minute + DefaultClockSkew + time.Second)
	if r := g.get(t, bearer(tok)); r.status != 401 || !strings.Contains(r.challenge, "expired") {
		t.Errorf("remembered token after its expiry: %d %q", r.status, r.challenge)
	}

	ctx := context.Background()
	for i := range maxCached + 10 {
		c := is.claims(g.resource)
		c["jti"] = i
		if _, f := g.a.jwt.verify(ctx, sign(t, key("ed"), c)); f != nil {
			t.Fatal(f.desc)
		}
	}
	if n := cached(); n > maxCached || n == 0 {
		t.Errorf("%d tokens remembered, bound %d", n, maxCached)
	}
}
