package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/hints"
)

// pageSite is the approval page signing people in with a, as preflight
// serve wires it.
type pageSite struct {
	srv       *httptest.Server
	approvals *approval.Service
	log       *bytes.Buffer
}

func newPageSite(t *testing.T, a *Authenticator) *pageSite {
	t.Helper()
	log := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	approvals := approval.New(nil, &approval.Options{Logger: logger})
	login := page.NewCredentialLogin(&page.CredentialLoginOptions{MaxBytes: MaxTokenBytes, Logger: logger, Failures: 3,
		Verify: func(ctx context.Context, credential string) (page.Identity, error) {
			p, err := a.Verify(ctx, credential)
			if err != nil {
				return page.Identity{}, err
			}
			return page.Identity{Principal: p.Name}, nil
		}})
	h, err := page.New(login, &page.Options{Approvals: approvals, Logger: logger, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := &pageSite{srv: httptest.NewServer(h), approvals: approvals, log: log}
	t.Cleanup(s.srv.Close)
	return s
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	site *pageSite
	c    *http.Client
	seen strings.Builder // every response body
}

func (s *pageSite) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, site: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.site.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	b.seen.Write(data)
	for k, vs := range resp.Header {
		b.seen.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
	}
	return resp.StatusCode, string(data), resp.Header
}

func (b *browser) signIn(credential string) int {
	st, _, _ := b.do(http.MethodPost, "/login", url.Values{"credential": {credential}})
	return st
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// decide approves id as b, returning the status.
func (b *browser) approve(id string) int {
	b.t.Helper()
	_, body, _ := b.do(http.MethodGet, "/", nil)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	st, _, _ := b.do(http.MethodPost, "/approvals/"+id+"/approve", url.Values{"csrf": {m[1]}})
	return st
}

func (s *pageSite) ask(t *testing.T, principal string) *approval.Request {
	t.Helper()
	r, err := s.approvals.Ask(context.Background(), approval.Call{Principal: principal, Server: "files", Tool: "delete_file",
		Arguments: json.RawMessage(`{"path":"/tmp/x"}`), Effect: hints.EffectDelete, Reason: "deletes a file", Matter: []string{"path"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkPageSignIn runs the story with alice's and bob's credentials: each
// signs in with their own, sees and approves only their own principal's
// call; a wrong credential gets no session; no credential is ever echoed
// or logged.
func checkPageSignIn(t *testing.T, a *Authenticator, alice, bob, wrong string) {
	s := newPageSite(t, a)
	call := s.ask(t, "alice")

	stranger := s.browser(t)
	if st, body, _ := stranger.do(http.MethodGet, "/login", nil); st != http.StatusOK || !strings.Contains(body, `name="credential"`) || !strings.Contains(body, `type="password"`) {
		t.Fatalf("sign-in form: %d\n%s", st, body)
	}
	if st := stranger.signIn(wrong); st != http.StatusForbidden {
		t.Fatalf("wrong credential: %d, want 403", st)
	}
	if st, _, h := stranger.do(http.MethodGet, "/approvals", nil); st != http.StatusSeeOther || !strings.HasSuffix(h.Get("Location"), "/login") {
		t.Fatalf("after a refused sign-in the page was served: %d", st)
	}

	b := s.browser(t)
	if st := b.signIn(bob); st != http.StatusSeeOther {
		t.Fatalf("bob's sign-in: %d", st)
	}
	if _, body, _ := b.do(http.MethodGet, "/approvals", nil); strings.Contains(body, call.ID) {
		t.Fatal("bob sees alice's pending call")
	}
	if st, _, _ := b.do(http.MethodGet, "/approvals/"+call.ID, nil); st == http.StatusOK {
		t.Fatalf("bob opened alice's call: %d", st)
	}
	if st := b.approve(call.ID); st == http.StatusOK || st == http.StatusSeeOther {
		t.Fatalf("bob approved alice's call: %d", st)
	}
	if r, _ := s.approvals.Get(context.Background(), call.ID, "alice"); r.State != approval.Pending {
		t.Fatalf("after bob: %v", r.State)
	}

	al := s.browser(t)
	if st := al.signIn(alice); st != http.StatusSeeOther {
		t.Fatalf("alice's sign-in: %d", st)
	}
	if _, body, _ := al.do(http.MethodGet, "/approvals", nil); !strings.Contains(body, call.ID) {
		t.Fatalf("alice does not see her pending call:\n%s", body)
	}
	if st := al.approve(call.ID); st != http.StatusOK && st != http.StatusSeeOther {
		t.Fatalf("alice approving her call: %d", st)
	}
	r, _ := s.approvals.Get(context.Background(), call.ID, "alice")
	if r.State != approval.Approved || r.DecidedBy.Principal != "alice" {
		t.Fatalf("after alice: %v by %+v", r.State, r.DecidedBy)
	}

	for _, cred := range []string{alice, bob, wrong} {
		for where, text := range map[string]string{"responses": stranger.seen.String() + b.seen.String() + al.seen.String(), "log": s.log.String()} {
			if strings.Contains(text, cred) {
				t.Errorf("a credential appears in the %s", where)
			}
		}
	}
	if !strings.Contains(s.log.String(), "page sign-in refused") {
		t.Errorf("the refused sign-in was not logged:\n%s", s.log)
	}
}

// TestPageSignInStatic signs in to the approval page with static tokens.
func TestPageSignInStatic(t *testing.T) {
	t.Parallel()
	var c Options
	var toks []string
	for _, name := range []string{"alice", "bob"} {
		tok, entry, err := NewToken(name)
		if err != nil {
			t.Fatal(err)
		}
		c.Tokens = append(c.Tokens, entry)
		toks = append(toks, tok)
	}
	a, err := New(&c)
	if err != nil {
		t.Fatal(err)
	}
	wrong := toks[0][:len(toks[0])-1] + flip(toks[0][len(toks[0])-1])
	checkPageSignIn(t, a, toks[0], toks[1], wrong)
}

// TestPageSignInOAuth signs in with JWTs of a local issuer: the audience,
// issuer and expiry are checked as for /mcp.
func TestPageSignInOAuth(t *testing.T) {
	t.Parallel()
	k := key("ec")
	is, g := oauthGateway(t, OAuth{}, k)
	alice := sign(t, k, is.claims(g.resource))
	bc := is.claims(g.resource)
	bc["sub"] = "bob"
	bob := sign(t, k, bc)
	wc := is.claims("https://other.example/mcp") // another audience
	checkPageSignIn(t, g.a, alice, bob, sign(t, k, wc))

	s := newPageSite(t, g.a)
	for name, change := range map[string]func(jwt.MapClaims){
		"expired": func(c jwt.MapClaims) {
			c["exp"] = c["iat"].(int64) - 3600
			c["iat"] = c["exp"].(int64) - 60
			c["nbf"] = c["iat"]
		},
		"other issuer": func(c jwt.MapClaims) { c["iss"] = "https://evil.example" },
	} {
		c := is.claims(g.resource)
		change(c)
		if st := s.browser(t).signIn(sign(t, k, c)); st != http.StatusForbidden {
			t.Errorf("%s token: %d, want 403", name, st)
		}
	}
}

// TestPageSignInLimits refuses an oversized credential unread and stops
// a client address after repeated failures, even with a right token.
func TestPageSignInLimits(t *testing.T) {
	t.Parallel()
	tok, entry, err := NewToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(&Options{Tokens: []Token{entry}})
	if err != nil {
		t.Fatal(err)
	}
	s := newPageSite(t, a)
	b := s.browser(t)
	if st := b.signIn(strings.Repeat("a", 2*MaxTokenBytes)); st != http.StatusRequestEntityTooLarge && st != http.StatusForbidden {
		t.Fatalf("oversized credential: %d", st)
	}
	for range 3 {
		b.signIn("pft_wrong")
	}
	st, _, h := b.do(http.MethodPost, "/login", url.Values{"credential": {tok}})
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("after failures: %d, want 429 with Retry-After", st)
	}
}
