package config

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

// Limits on the oauth section's lists.
const (
	maxAudiences = 16
	maxScopes    = 32
	maxClaimName = 64
)

// auth checks the auth section and applies its defaults.
func (p *parser) auth(a *Auth) {
	if p.dec.set("auth") && len(a.Tokens) == 0 && !p.dec.set("auth.oauth") {
		p.fail("auth", "sets neither tokens nor oauth: leave auth out to serve without authentication (on a loopback address only)")
	}
	if len(a.Tokens) > MaxTokens {
		p.fail("auth.tokens", "%d tokens: at most %d", len(a.Tokens), MaxTokens)
	}
	first := map[string]int{}
	for i := range a.Tokens {
		p.token(i, &a.Tokens[i], first)
	}
	if len(a.Tokens) == 0 {
		a.Tokens = nil
	}
	if p.dec.set("auth.oauth") {
		p.oauth(&a.OAuth)
	}
}

func (p *parser) token(i int, t *Token, first map[string]int) {
	at := index("auth.tokens", i)
	switch {
	case t.Principal == "":
		p.fail(at+".principal", "required: the name decisions, approvals and the audit give whoever presents the token")
	case utf8.RuneCountInString(t.Principal) > MaxPrincipalLen || hasControl(t.Principal):
		p.fail(at+".principal", "a principal has 1 to %d characters, none of them control characters", MaxPrincipalLen)
	}
	hex, ok := strings.CutPrefix(t.SHA256, "sha256:")
	switch {
	case t.SHA256 == "":
		p.fail(at+".sha256", "required: sha256: and the token's SHA-256 in hex, as preflight token prints it")
	case !ok:
		// The value is not repeated: it may be the token itself.
		p.fail(at+".sha256", "not a hash: write sha256: and the token's SHA-256 in hex, as preflight token prints it (the token itself never goes in the config)")
	case len(hex) != 64 || strings.Trim(strings.ToLower(hex), "0123456789abcdef") != "":
		p.fail(at+".sha256", "sha256: must be followed by 64 hexadecimal digits")
	default:
		t.SHA256 = "sha256:" + strings.ToLower(hex)
		if j, dup := first[t.SHA256]; dup {
			p.fail(at+".sha256", "the same token as auth.tokens[%d]", j)
		} else {
			first[t.SHA256] = i
		}
	}
}

func (p *parser) oauth(o *OAuth) {
	const at = "auth.oauth."
	if o.Issuer == "" {
		p.fail(at+"issuer", "required: the authorization server's issuer identifier, an https:// URL")
	} else if p.secureURL(at+"issuer", o.Issuer) {
		if u, _ := url.Parse(o.Issuer); u.RawQuery != "" || u.ForceQuery {
			p.fail(at+"issuer", "an issuer identifier has no query (RFC 8414)")
		}
	}
	if o.Resource == "" {
		p.fail(at+"resource", "required: the canonical URL of this gateway's MCP endpoint as clients reach it, such as https://mcp.example.com/mcp")
	} else {
		p.secureURL(at+"resource", o.Resource)
	}
	if o.JWKSURL != "" {
		p.secureURL(at+"jwksUrl", o.JWKSURL)
	}

	if len(o.Audience) == 0 && o.Resource != "" {
		o.Audience = []string{o.Resource}
	}
	if len(o.Audience) > maxAudiences {
		p.fail(at+"audience", "%d audiences: at most %d", len(o.Audience), maxAudiences)
	}
	for i, aud := range o.Audience {
		if aud == "" || hasControl(aud) {
			p.fail(index(at+"audience", i), "an audience is a non-empty string without control characters")
		} else if j := slices.Index(o.Audience, aud); j < i {
			p.fail(index(at+"audience", i), "also audience[%d]", j)
		}
	}

	if len(o.Algorithms) == 0 {
		o.Algorithms = defaultAlgorithms()
	}
	for i, alg := range o.Algorithms {
		if j := slices.Index(o.Algorithms, alg); j < i {
			p.fail(index(at+"algorithms", i), "%s is also algorithms[%d]", alg, j)
		}
	}

	if len(o.Scopes) > maxScopes {
		p.fail(at+"scopes", "%d scopes: at most %d", len(o.Scopes), maxScopes)
	}
	for i, s := range o.Scopes {
		if !validScope(s) {
			p.fail(index(at+"scopes", i), "%s is not a scope (printable ASCII without spaces, \" or \\)", quote(s))
		} else if j := slices.Index(o.Scopes, s); j < i {
			p.fail(index(at+"scopes", i), "%s is also scopes[%d]", quote(s), j)
		}
	}
	if len(o.Scopes) == 0 {
		o.Scopes = nil
	}

	if o.PrincipalClaim == "" {
		o.PrincipalClaim = DefaultPrincipalClaim
	} else if len(o.PrincipalClaim) > maxClaimName || hasControl(o.PrincipalClaim) {
		p.fail(at+"principalClaim", "a claim name has 1 to %d bytes, none of them control characters", maxClaimName)
	}

	for _, d := range []struct {
		v   *Duration
		def time.Duration
	}{
		{&o.ClockSkew, DefaultClockSkew},
		{&o.JWKSRefresh, DefaultJWKSRefresh},
		{&o.JWKSMinInterval, DefaultJWKSMinInterval},
	} {
		if *d.v == 0 {
			*d.v = Duration(d.def)
		}
	}
	if time.Duration(o.ClockSkew) > MaxClockSkew {
		p.fail(at+"clockSkew", "%s is more than %s: a small tolerance for clocks that drift, not a grace period", o.ClockSkew, Duration(MaxClockSkew))
	}
	switch {
	case o.JWKSMinInterval < Duration(time.Second):
		p.fail(at+"jwksMinInterval", "%s is less than 1s: it bounds how often the keys are fetched", o.JWKSMinInterval)
	case o.JWKSMinInterval > o.JWKSRefresh:
		p.fail(at+"jwksMinInterval", "%s is longer than jwksRefresh (%s), which bounds it", o.JWKSMinInterval, o.JWKSRefresh)
	}
}

// secureURL checks that v is an https:// URL, or an http:// one on a
// loopback host (for tests and local development), without a fragment or
// user information. The URL is not repeated in errors.
func (p *parser) secureURL(path, v string) bool {
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		p.fail(path, "not an https:// URL with a host")
	case u.Scheme != "https" && (u.Scheme != "http" || !loopback.Is(u.Host)):
		p.fail(path, "not an https:// URL (http:// is allowed only for a loopback host such as 127.0.0.1)")
	case u.User != nil:
		p.fail(path, "a URL here holds no user or password")
	case u.Fragment != "" || strings.Contains(v, "#"):
		p.fail(path, "a URL here has no fragment (#...)")
	default:
		return true
	}
	return false
}

// validScope reports whether s is a scope token of RFC 6749 section 3.3.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
