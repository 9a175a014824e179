package auth

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/config"
)

// staticConfig returns n tokens for principals p0..p(n-1), and the tokens.
func staticConfig(t testing.TB, n int) (Options, []string) {
	t.Helper()
	var c Options
	var tokens []string
	for i := range n {
		tok, entry, err := NewToken(fmt.Sprintf("p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		c.Tokens = append(c.Tokens, entry)
		tokens = append(tokens, tok)
	}
	return c, tokens
}

// TestStaticTokens sends right, wrong and malformed static tokens over
// HTTP.
func TestStaticTokens(t *testing.T) {
	t.Parallel()
	c, tokens := staticConfig(t, 3)
	g := newGateway(t, c)

	for i, tok := range tokens {
		r := g.get(t, bearer(tok))
		if r.status != http.StatusOK || r.seen.Principal != fmt.Sprintf("p%d", i) || r.seen.Method != MethodToken || r.seen.UserID != r.seen.Principal {
			t.Errorf("token %d: %d %+v %s", i, r.status, r.seen, r.body)
		}
		if r.seen.Authorization != "" {
			t.Errorf("token %d: the handler saw the Authorization header %q", i, r.seen.Authorization)
		}
	}
	// The scheme is case-insensitive, and spaces around the token are not part of it.
	if r := g.get(t, "bearer   "+tokens[0]+" "); r.status != http.StatusOK || r.seen.Principal != "p0" {
		t.Errorf("lower-case scheme: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		name   string
		header []string
		status int
		want   string // WWW-Authenticate
	}{
		{"missing", nil, 401, `Bearer realm="preflight"`},
		{"basic", []string{"Basic YWxpY2U6c2VjcmV0"}, 401, `Bearer realm="preflight"`},
		{"wrong", []string{bearer(TokenPrefix + strings.Repeat("A", 43))}, 401, `Bearer realm="preflight", error="invalid_token", error_description="unknown token"`},
		{"one character off", []string{bearer(tokens[1][:len(tokens[1])-1] + flip(tokens[1][len(tokens[1])-1]))}, 401, `Bearer realm="preflight", error="invalid_token", error_description="unknown token"`},
		{"prefix of a token", []string{bearer(tokens[0][:20])}, 401, `Bearer realm="preflight", error="invalid_token", error_description="unknown token"`},
		{"hash instead of token", []string{bearer(strings.TrimPrefix(c.Tokens[0].SHA256, "sha256:"))}, 401, `Bearer realm="preflight", error="invalid_token", error_description="unknown token"`},
		{"two headers", []string{bearer(tokens[0]), bearer(tokens[1])}, 400, `Bearer realm="preflight", error="invalid_request", error_description="more than one Authorization header"`},
		{"three fields", []string{"Bearer " + tokens[0] + " extra"}, 400, `Bearer realm="preflight", error="invalid_request", error_description="malformed Authorization header"`},
		{"bearer alone", []string{"Bearer"}, 400, `Bearer realm="preflight", error="invalid_request", error_description="malformed Authorization header"`},
		{"bad characters", []string{bearer(tokens[0] + "\"")}, 401, `Bearer realm="preflight", error="invalid_token", error_description="malformed token"`},
		{"too long", []string{bearer(strings.Repeat("a", MaxTokenBytes+1))}, 401, `Bearer realm="preflight", error="invalid_token", error_description="the token is too long"`},
		{"a JWT without oauth", []string{bearer("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.")}, 401, `Bearer realm="preflight", error="invalid_token", error_description="unknown token"`},
	} {
		r := g.get(t, tc.header...)
		if r.status != tc.status || r.challenge != tc.want {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.status, r.challenge, tc.status, tc.want)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", tc.name, r.header.Get("Cache-Control"))
		}
		for _, tok := range tokens {
			if strings.Contains(r.body, tok) {
				t.Errorf("%s: the body repeats a token: %q", tc.name, r.body)
			}
		}
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestStaticCompareConstantTime checks the comparison path: every stored
// hash is compared, with subtle.ConstantTimeCompare, whether the token
// matches the first, the last or none, so that the time taken does not
// say which (a loop that stopped at the match would fail here).
func TestStaticCompareConstantTime(t *testing.T) {
	t.Parallel()
	c, tokens := staticConfig(t, 5)
	s, err := newStaticTokens(c.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(s.compare).Pointer() != reflect.ValueOf(subtle.ConstantTimeCompare).Pointer() {
		t.Fatal("the comparison is not subtle.ConstantTimeCompare")
	}
	calls := 0
	s.compare = func(a, b []byte) int { calls++; return subtle.ConstantTimeCompare(a, b) }
	for _, tc := range []struct {
		token string
		want  string // principal, "" for none
	}{
		{tokens[0], "p0"},
		{tokens[4], "p4"},
		{tokens[2], "p2"},
		{"pft_not-a-token", ""},
		{"", ""},
	} {
		calls = 0
		id := s.match(tc.token)
		got := ""
		if id != nil {
			got = id.p.Name
		}
		if got != tc.want || calls != len(tokens) {
			t.Errorf("match(%.10q) = %q after %d comparisons, want %q after %d", tc.token, got, calls, tc.want, len(tokens))
		}
	}
}

func TestHashToken(t *testing.T) {
	t.Parallel()
	// The SHA-256 of "test", as sha256sum prints it.
	if got := HashToken("test"); got != "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
		t.Errorf("HashToken(test) = %s", got)
	}
	tok, entry, err := NewToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || len(tok) != len(TokenPrefix)+43 || !b64token(tok) {
		t.Errorf("token %q", tok)
	}
	if entry.Principal != "alice" || entry.SHA256 != HashToken(tok) {
		t.Errorf("entry %+v", entry)
	}
	tok2, _, _ := NewToken("alice")
	if tok2 == tok {
		t.Error("two tokens are the same")
	}
	// The entry is what the config accepts.
	yaml := fmt.Sprintf("servers: {s: {command: x}}\nauth: {tokens: [{principal: %s, sha256: %q}]}\n", entry.Principal, entry.SHA256)
	cfg, err := config.Parse("c.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil || !reflect.DeepEqual(cfg.Auth.Tokens, []config.Token{config.Token(entry)}) {
		t.Errorf("config: %v %+v", err, cfg)
	}
	for _, bad := range []string{"", "a\nb", strings.Repeat("x", MaxPrincipalLen+1)} {
		if _, _, err := NewToken(bad); err == nil {
			t.Errorf("NewToken(%q) accepted", bad)
		}
	}
}

// TestNewRefuses checks that New refuses what it cannot use safely, when
// a config did not come through config.Parse.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	good := OAuth{Issuer: "https://a.example.com", Resource: "https://m.example.com/mcp"}
	for name, c := range map[string]Options{
		"bad hash":       {Tokens: []Token{{Principal: "a", SHA256: "sha256:00"}}},
		"raw token":      {Tokens: []Token{{Principal: "a", SHA256: "pft_x"}}},
		"no principal":   {Tokens: []Token{{SHA256: HashToken("x")}}},
		"long principal": {Tokens: []Token{{Principal: strings.Repeat("p", MaxPrincipalLen+1), SHA256: HashToken("x")}}},
		"duplicate":      {Tokens: []Token{{Principal: "a", SHA256: HashToken("x")}, {Principal: "b", SHA256: HashToken("x")}}},
		"HS256":          {OAuth: with(good, func(o *OAuth) { o.Algorithms = []string{"HS256"} })},
		"none":           {OAuth: with(good, func(o *OAuth) { o.Algorithms = []string{"none"} })},
		"http issuer":    {OAuth: with(good, func(o *OAuth) { o.Issuer = "http://a.example.com" })},
		"no resource":    {OAuth: with(good, func(o *OAuth) { o.Resource = "" })},
		"http jwks":      {OAuth: with(good, func(o *OAuth) { o.JWKSURL = "http://a.example.com/jwks" })},
		"empty oauth ok": {},
	} {
		_, err := New(&c)
		if (err == nil) != (name == "empty oauth ok") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(&Options{OAuth: &good}); err != nil {
		t.Errorf("good: %v", err)
	}
}

func with(o OAuth, f func(*OAuth)) *OAuth {
	f(&o)
	return &o
}
