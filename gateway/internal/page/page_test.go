package page_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/safety"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sessionCookie(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err == nil && strings.Contains(c.Name, "preflight_session") && c.MaxAge >= 0 {
			return c
		}
	}
	t.Fatalf("no session cookie set; Set-Cookie: %q", h.Values("Set-Cookie"))
	return nil
}

// TestLoginWithToken: the page is closed to a browser without a session;
// the printed link shows a sign-in button; signing in spends the token and
// sets an HttpOnly, SameSite=Strict session cookie; the token cannot be
// used twice.
func TestLoginWithToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	for _, p := range []string{"/", "/approvals", "/audit", "/tools", "/pins", "/fragments/pending"} {
		if r := b.get(p); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
			t.Errorf("GET %s without a session: %d to %q; want 303 to /login", p, r.status, r.header.Get("Location"))
		}
	}
	if r := b.get("/login"); r.status != http.StatusOK || !strings.Contains(r.body, "Open the login link the gateway printed") {
		t.Errorf("GET /login: %d\n%s", r.status, r.body)
	}
	if r := b.get("/login?token=" + strings.Repeat("A", 43)); r.status != http.StatusForbidden || !strings.Contains(r.body, "not valid") || strings.Contains(r.body, `id="signin"`) {
		t.Errorf("unknown token: %d\n%s", r.status, r.body)
	}

	link, err := f.login.NewLink(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	token := u.Query().Get("token")
	if u.Path != "/login" || len(token) != 43 {
		t.Fatalf("login link %s", link)
	}
	// Opening the link twice (a preview, a reload) spends nothing.
	for range 2 {
		if r := b.get(u.RequestURI()); r.status != http.StatusOK || !strings.Contains(r.body, `id="signin"`) {
			t.Fatalf("GET the login link: %d\n%s", r.status, r.body)
		}
	}
	// Signing in returns to the last page asked for (not the fragment).
	r := b.post("/login", url.Values{"token": {token}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/pins" {
		t.Fatalf("POST /login: %d to %q\n%s", r.status, r.header.Get("Location"), r.body)
	}
	c := sessionCookie(t, r.header)
	if c.Name != "preflight_session_"+f.port() || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || len(c.Value) != 43 {
		t.Errorf("session cookie %+v", c)
	}
	if r := b.get("/"); r.status != http.StatusOK || !strings.Contains(r.body, `<b id="who">operator</b>`) {
		t.Errorf("front page with the session: %d\n%s", r.status, r.body)
	}
	other := f.browser()
	if r := other.post("/login", url.Values{"token": {token}}); r.status != http.StatusForbidden {
		t.Errorf("the same token again: %d; want 403", r.status)
	}
	if r := other.get(u.RequestURI()); r.status != http.StatusForbidden {
		t.Errorf("the used link: %d; want 403", r.status)
	}
	if r := other.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("a browser without the cookie got the page: %d", r.status)
	}
}

// TestLoginReturnsToTheApproval: opening a request's page without a
// session leads through sign-in back to that request (the URL-mode
// elicitation's address), and only ever to a path of the page.
func TestLoginReturnsToTheApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	req := f.ask("", "manage_files", `{"path":"a.txt"}`)
	b := f.browser()
	if r := b.get("/approvals/" + req.ID); r.status != http.StatusSeeOther {
		t.Fatalf("GET the request without a session: %d", r.status)
	}
	link, _ := f.login.NewLink(f.srv.URL)
	u, _ := url.Parse(link)
	r := b.post("/login", url.Values{"token": {u.Query().Get("token")}})
	if want := "/approvals/" + req.ID; r.status != http.StatusSeeOther || r.header.Get("Location") != want {
		t.Fatalf("after signing in: %d to %q, want %s", r.status, r.header.Get("Location"), want)
	}
	if r := b.get("/approvals/" + req.ID); r.status != http.StatusOK || !strings.Contains(r.body, `id="state">pending`) {
		t.Errorf("request page: %d\n%s", r.status, r.body)
	}

	// A planted return address to another site is ignored.
	evil := f.browser()
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "/login?token=x"} {
		jarURL, _ := url.Parse(f.srv.URL + "/")
		evil.client.Jar.SetCookies(jarURL, []*http.Cookie{{Name: "preflight_next_" + f.port(), Value: url.QueryEscape(next), Path: "/"}})
		link, _ := f.login.NewLink(f.srv.URL)
		u, _ := url.Parse(link)
		if r := evil.post("/login", url.Values{"token": {u.Query().Get("token")}}); r.header.Get("Location") != "/" {
			t.Errorf("next %q: redirected to %q, want /", next, r.header.Get("Location"))
		}
	}
}

// TestCSRF: a POST without the session's CSRF token, with another token,
// from another origin or another site is refused and changes nothing; the
// form as the page sends it works.
func TestCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	csrf := b.signIn()
	req := f.ask("", "manage_files", `{"path":"a.txt"}`)
	path := "/approvals/" + req.ID + "/approve"
	for name, tc := range map[string]struct {
		form    url.Values
		headers []string
		want    int
	}{
		"no token":     {url.Values{}, nil, http.StatusForbidden},
		"wrong token":  {url.Values{"csrf": {strings.Repeat("x", len(csrf))}}, nil, http.StatusForbidden},
		"token prefix": {url.Values{"csrf": {csrf[:10]}}, nil, http.StatusForbidden},
		"cross origin": {url.Values{"csrf": {csrf}}, []string{"Origin", "http://evil.example", "Sec-Fetch-Site", ""}, http.StatusForbidden},
		"cross site":   {url.Values{"csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site", "Origin", ""}, http.StatusForbidden},
	} {
		if r := b.post(path, tc.form, tc.headers...); r.status != tc.want {
			t.Errorf("%s: %d, want %d\n%s", name, r.status, tc.want, r.body)
		}
		if st := f.state(req.ID, ""); st != approval.Pending {
			t.Fatalf("%s: the request became %s", name, st)
		}
	}
	// Another session's token does not fit this session.
	other := f.browser()
	otherCSRF := other.signIn()
	if r := b.post(path, url.Values{"csrf": {otherCSRF}}); r.status != http.StatusForbidden {
		t.Errorf("another session's token: %d", r.status)
	}
	// Without a session, nothing is decided either.
	anon := f.browser()
	if r := anon.post(path, url.Values{"csrf": {csrf}}); r.status != http.StatusUnauthorized {
		t.Errorf("no session: %d", r.status)
	}
	if r := b.post(path, url.Values{"csrf": {csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("the page's own form: %d\n%s", r.status, r.body)
	}
	if st := f.state(req.ID, ""); st != approval.Approved {
		t.Errorf("after the page's form the request is %s", st)
	}
}

// TestApproveAndDeny: the page lists the viewer's pending calls and
// decides them; a replayed decision is a conflict, a forged id or another
// principal's request is not found, and nothing changes.
func TestApproveAndDeny(t *testing.T) {
	t.Parallel()
	alice := &page.Identity{Principal: "alice", Name: "Alice"}
	f := newFixture(t, &fixtureOptions{identity: alice})
	b := f.browser()
	csrf := b.signIn()
	del := f.ask("alice", "delete_file", `{"path":"old.txt"}`)
	wipe := f.ask("alice", "wipe_disk", `{"path":"/"}`)
	bobs := f.ask("bob", "delete_file", `{"path":"bob.txt"}`)

	r := b.get("/")
	for _, want := range []string{`id="req-` + del.ID, `id="req-` + wipe.ID, `data-approve="` + del.ID, "old.txt"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("front page lacks %q", want)
		}
	}
	if strings.Contains(r.body, bobs.ID) || strings.Contains(r.body, "bob.txt") {
		t.Error("front page shows another principal's request")
	}

	if r := b.post("/approvals/"+del.ID+"/approve", url.Values{"csrf": {csrf}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/approvals/"+del.ID {
		t.Fatalf("approve: %d to %q", r.status, r.header.Get("Location"))
	}
	if r := b.get("/approvals/" + del.ID); !strings.Contains(r.body, `id="state">approved`) || !strings.Contains(r.body, "Approved by <b>Alice</b>") {
		t.Errorf("approved request's page:\n%s", r.body)
	}
	got, err := f.approvals.Ask(context.Background(), approval.Call{Principal: "alice", Server: "files", Tool: "delete_file",
		Arguments: []byte(`{"path":"old.txt"}`), Effect: hints.EffectDelete})
	if err != nil || got.State != approval.Used || got.DecidedBy.String() != "Alice" {
		t.Errorf("the retry after the page's approval: %+v, %v", got, err)
	}

	if r := b.post("/approvals/"+wipe.ID+"/deny", url.Values{"csrf": {csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("deny: %d", r.status)
	}
	if st := f.state(wipe.ID, "alice"); st != approval.Denied {
		t.Errorf("denied request is %s", st)
	}
	if r := b.post("/approvals/"+wipe.ID+"/approve", url.Values{"csrf": {csrf}}); r.status != http.StatusConflict || !strings.Contains(r.body, "no longer pending") {
		t.Errorf("replayed decision: %d\n%s", r.status, r.body)
	}
	if st := f.state(wipe.ID, "alice"); st != approval.Denied {
		t.Errorf("a replayed approval turned a denial into %s", st)
	}
	for _, id := range []string{bobs.ID, "AAAAAAAAAAAAAAAAAAAAAA", "not-an-id"} {
		if r := b.post("/approvals/"+id+"/approve", url.Values{"csrf": {csrf}}); r.status != http.StatusNotFound {
			t.Errorf("approve %s: %d, want 404", id, r.status)
		}
		if r := b.get("/approvals/" + id); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", id, r.status)
		}
	}
	if st := f.state(bobs.ID, "bob"); st != approval.Pending {
		t.Errorf("bob's request became %s through alice's page", st)
	}
	if r := b.post("/approvals/"+del.ID+"/launch", url.Values{"csrf": {csrf}}); r.status != http.StatusNotFound {
		t.Errorf("unknown verb: %d", r.status)
	}
	if r := b.get("/approvals"); !strings.Contains(r.body, "denied") || !strings.Contains(r.body, "used") {
		t.Errorf("history lacks the decisions:\n%s", r.body)
	}
}

var nonceRE = regexp.MustCompile(`'nonce-([A-Za-z0-9_-]+)'`)

// TestSecurityHeaders: every answer carries a CSP whose nonce is the only
// way the page's inline style and script run; the page loads nothing from
// elsewhere.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn()
	f.ask("", "manage_files", `{"path":"a.txt"}`)
	f.record("", "manage_files", hints.EffectRead, audit.Allow, time.Now().Add(-time.Hour))
	seen := map[string]bool{}
	for _, p := range []string{"/", "/approvals", "/audit", "/tools", "/pins", "/login"} {
		r := b.get(p)
		csp := r.header.Get("Content-Security-Policy")
		m := nonceRE.FindStringSubmatch(csp)
		if m == nil || !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("%s: CSP %q", p, csp)
		}
		if seen[m[1]] {
			t.Errorf("%s: nonce reused", p)
		}
		seen[m[1]] = true
		for _, tag := range regexp.MustCompile(`<(script|style)[^>]*>`).FindAllString(r.body, -1) {
			if !strings.Contains(tag, `nonce="`+m[1]+`"`) {
				t.Errorf("%s: %s without the response's nonce", p, tag)
			}
		}
		if regexp.MustCompile(`(?i)(src|href|action)="(https?:)?//`).MatchString(r.body) || strings.Contains(r.body, "@import") {
			t.Errorf("%s: refers to another origin", p)
		}
		if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(r.body) || strings.Contains(r.body, `style="`) {
			t.Errorf("%s: inline handler or style attribute (blocked by the CSP)", p)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := r.header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", p, k, got, want)
			}
		}
	}
}

// TestHosts: by default only loopback host names are served (a DNS
// rebinding page cannot address it); Hosts lists others.
func TestHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for host, want := range map[string]int{
		"evil.example": http.StatusMisdirectedRequest, "evil.example:80": http.StatusMisdirectedRequest, "10.0.0.1": http.StatusMisdirectedRequest,
		"localhost:1": http.StatusOK, "127.0.0.1": http.StatusOK, "[::1]:8080": http.StatusOK, "127.5.0.1:9": http.StatusOK,
	} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/login", nil)
		req.Host = host
		r := f.browser().do(req)
		if r.status != want {
			t.Errorf("Host %q: %d, want %d", host, r.status, want)
		}
	}
	h, err := page.New(page.NewTokenLogin(nil), &page.Options{Hosts: []string{"gw.example"}})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"gw.example": http.StatusOK, "GW.example:443": http.StatusOK, "localhost": http.StatusMisdirectedRequest} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.Host = host
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Hosts [gw.example], Host %q: %d, want %d", host, rec.Code, want)
		}
	}
}

// TestServerTextIsEscaped: tool names, arguments and reasons that hold
// markup appear as text on every page that shows them.
func TestServerTextIsEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn()
	req, err := f.approvals.Ask(context.Background(), approval.Call{
		Server: "files<script>alert(1)</script>", Tool: `<img src=x onerror=alert(2)>`,
		Arguments: []byte(`{"path":"\"><script>alert(3)</script>","<b>k</b>":"x"}`), Reason: `<iframe src="javascript:alert(4)">`,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.record("<svg onload=alert(5)>", "<script>alert(6)</script>", hints.EffectDelete, audit.Confirm, time.Now().Add(-time.Minute))
	for _, p := range []string{"/", "/approvals", "/approvals/" + req.ID, "/audit", "/fragments/pending"} {
		r := b.get(p)
		for _, raw := range []string{"<script>alert", "<img src=x", "<iframe", "<svg onload", "<b>k</b>"} {
			if strings.Contains(r.body, raw) {
				t.Errorf("%s carries %q unescaped", p, raw)
			}
		}
	}
	r := b.get("/approvals/" + req.ID)
	for _, want := range []string{"&lt;img src=x onerror=alert(2)&gt;", "&#34;&gt;&lt;script&gt;alert(3)&lt;/script&gt;", "&lt;b&gt;k&lt;/b&gt;"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("request page lacks the escaped %q", want)
		}
	}
}

// TestAuditPage: filters narrow the log, a bad filter says what is
// expected, and a viewer who is not an admin sees only their own calls.
func TestAuditPage(t *testing.T) {
	t.Parallel()
	now := time.Now()
	alice := &page.Identity{Principal: "alice"}
	for _, admin := range []bool{true, false} {
		id := *alice
		id.Admin = admin
		f := newFixture(t, &fixtureOptions{identity: &id})
		f.record("alice", "read_file", hints.EffectRead, audit.Allow, now.Add(-3*time.Hour))
		f.record("alice", "delete_file", hints.EffectDelete, audit.Confirm, now.Add(-2*time.Hour))
		f.record("bob", "delete_file", hints.EffectDelete, audit.Deny, now.Add(-time.Hour))
		b := f.browser()
		b.signIn()
		r := b.get("/audit?effect=delete&since=&principal=")
		rows := strings.Count(r.body, "<td class=\"mono\">delete_file</td>")
		wantRows := map[bool]int{true: 2, false: 1}[admin]
		if r.status != http.StatusOK || rows != wantRows || strings.Contains(r.body, ">read_file<") {
			t.Errorf("admin=%v, effect=delete: %d, %d rows (want %d)\n%s", admin, r.status, rows, wantRows, r.body)
		}
		r = b.get("/audit?principal=bob")
		if got := strings.Count(r.body, "<tr>") - 1; admin && got != 1 || !admin && got != 2 {
			t.Errorf("admin=%v, principal=bob: %d rows", admin, got)
		}
		r = b.get("/audit?effect=explode")
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "want read, write, external or delete") {
			t.Errorf("bad filter: %d\n%s", r.status, r.body)
		}
		if r := b.get("/audit?color=red"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "unknown filter") {
			t.Errorf("unknown filter: %d", r.status)
		}
		r = b.get("/")
		if !strings.Contains(r.body, `id="chart"`) || !strings.Contains(r.body, "<rect class=\"d-confirm\"") {
			t.Errorf("admin=%v: the front page has no chart with a confirmed call", admin)
		}
		if wantDeny := admin; strings.Contains(r.body, "<rect class=\"d-deny\"") != wantDeny {
			t.Errorf("admin=%v: bob's denied call drawn: %v", admin, !wantDeny)
		}
		// A call to an upstream signed in to with OAuth says whose grant it carried.
		if err := f.audit.Write(t.Context(), []*audit.Record{{Time: now.Add(-time.Minute), Principal: "alice", Server: "github",
			Tool: "create_issue", SignedInAs: "shared", Effect: hints.EffectWrite, Decision: audit.Allow, Level: audit.LevelSummary,
			Outcome: audit.OutcomeOK}}); err != nil {
			t.Fatal(err)
		}
		r = b.get("/audit?server=github")
		if n := strings.Count(r.body, `<div class="muted signed-in"`); n != 1 || !strings.Contains(r.body, "signed in as shared</div>") {
			t.Errorf("admin=%v: the record signed in as shared shows %d times:\n%s", admin, n, r.body)
		}
	}
}

// TestToolsPage shows the effective safety of a real catalog's tools.
func TestToolsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn()
	r := b.get("/tools")
	for _, want := range []string{"read_text_file", "write_file", "risk-destructive", "risk-read-only", "result sensitivity", "confirmation"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("tools page lacks %q", want)
		}
	}
}

// TestPinsPage: quarantined tools are listed first with what changed; only
// an admin approves a new definition, by its digest, with the CSRF token.
func TestPinsPage(t *testing.T) {
	t.Parallel()
	for _, admin := range []bool{false, true} {
		f := newFixture(t, &fixtureOptions{identity: &page.Identity{Principal: "alice", Admin: admin}})
		b := f.browser()
		csrf := b.signIn()
		r := b.get("/pins")
		if i, j := strings.Index(r.body, "delete_file"), strings.Index(r.body, "read_file"); i < 0 || j < 0 || i > j ||
			!strings.Contains(r.body, "destructiveHint: true -&gt; false") {
			t.Errorf("pins page:\n%s", r.body)
		}
		if strings.Contains(r.body, "Approve new definition") != admin {
			t.Errorf("admin=%v: approve button shown %v", admin, !admin)
		}
		form := url.Values{"csrf": {csrf}, "server": {"files"}, "tool": {"delete_file"}, "candidate": {"sha256-del-cccccccccccc"}}
		r = b.post("/pins/approve", form)
		if !admin {
			if r.status != http.StatusForbidden || len(f.pins.by) != 0 {
				t.Errorf("non-admin approval: %d, approved %d", r.status, len(f.pins.by))
			}
			continue
		}
		if r.status != http.StatusSeeOther || len(f.pins.by) != 1 || f.pins.by[0].Principal != "alice" {
			t.Errorf("admin approval: %d, %+v", r.status, f.pins.by)
		}
		if r := b.post("/pins/approve", form); r.status != http.StatusConflict {
			t.Errorf("approving again: %d", r.status)
		}
	}
}

// TestLogout ends the session for good.
func TestLogout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	csrf := b.signIn()
	jarURL, _ := url.Parse(f.srv.URL + "/")
	old := b.client.Jar.Cookies(jarURL)
	if r := b.post("/logout", url.Values{"csrf": {csrf}}); r.status != http.StatusOK {
		t.Fatalf("logout: %d", r.status)
	}
	if r := b.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("after logout: %d", r.status)
	}
	replay := f.browser()
	replay.client.Jar.SetCookies(jarURL, old)
	if r := replay.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("the old cookie after logout: %d", r.status)
	}
}

// TestCookiePerGateway: two gateways on one machine, on two ports, keep
// their own sessions in one browser: signing in to one leaves the other
// signed in.
func TestCookiePerGateway(t *testing.T) {
	t.Parallel()
	one, two := newFixture(t, nil), newFixture(t, nil)
	jar, _ := cookiejar.New(nil)
	signIn := func(f *fixture) *browser {
		b := f.browser()
		b.client.Jar = jar
		link, _ := f.login.NewLink(f.srv.URL)
		u, _ := url.Parse(link)
		if r := b.post("/login", url.Values{"token": {u.Query().Get("token")}}); r.status != http.StatusSeeOther {
			t.Fatalf("sign in to %s: %d", f.srv.URL, r.status)
		}
		return b
	}
	b1 := signIn(one)
	b2 := signIn(two)
	if r := b1.get("/"); r.status != http.StatusOK {
		t.Errorf("the first gateway's page after signing in to the second: %d", r.status)
	}
	if r := b2.get("/"); r.status != http.StatusOK {
		t.Errorf("the second gateway's page: %d", r.status)
	}
}

// TestSecureCookie: over TLS the session cookie is Secure and
// host-bound (__Host-).
func TestSecureCookie(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{tls: true})
	b := f.browser()
	link, _ := f.login.NewLink(f.srv.URL)
	u, _ := url.Parse(link)
	r := b.post("/login", url.Values{"token": {u.Query().Get("token")}})
	c := sessionCookie(t, r.header)
	if c.Name != "__Host-preflight_session_"+f.port() || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" {
		t.Errorf("cookie over TLS: %+v", c)
	}
	if r := b.get("/"); r.status != http.StatusOK {
		t.Errorf("front page over TLS: %d", r.status)
	}
}

// TestSessionsBounded: a principal's new session replaces its oldest; a
// full store drops the oldest session of the principal holding the most,
// never an admin's for another's sign-in, and forgets expired ones.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := page.NewMemSessions(&page.MemSessionsOptions{Max: 3, PerPrincipal: 2})
	now := time.Now()
	create := func(key, principal string, admin bool, age int) error {
		return m.Create(ctx, key, page.Session{Identity: page.Identity{Principal: principal, Admin: admin},
			Created: now.Add(time.Duration(age) * time.Second), Expires: now.Add(time.Hour)})
	}
	live := func(key string) bool { _, err := m.Get(ctx, key, now); return err == nil }
	for i, k := range []string{"op", "bob1", "bob2", "bob3"} {
		principal := strings.TrimRight(k, "0123456789")
		if err := create(k, principal, principal == "op", i); err != nil {
			t.Fatal(err)
		}
	}
	if live("bob1") || !live("bob2") || !live("bob3") || !live("op") {
		t.Errorf("after bob's third sign-in (quota 2): bob1 %v, bob2 %v, bob3 %v, op %v", live("bob1"), live("bob2"), live("bob3"), live("op"))
	}
	if err := create("carol", "carol", false, 9); err != nil {
		t.Fatal(err)
	}
	if live("bob2") || !live("bob3") || !live("carol") || !live("op") {
		t.Errorf("carol's sign-in into a full store: bob2 %v, bob3 %v, carol %v, op %v", live("bob2"), live("bob3"), live("carol"), live("op"))
	}
	if _, err := m.Get(ctx, "op", now.Add(time.Hour)); err == nil {
		t.Error("an expired session was returned")
	}

	// A session of the operator's principal that is not an admin's is not
	// the operator's own: at the quota it drops none of the operator's.
	one := page.NewMemSessions(&page.MemSessionsOptions{PerPrincipal: 1})
	for _, s := range []page.Session{{Identity: page.Identity{Admin: true}}, {Identity: page.Identity{}}} {
		s.Expires = now.Add(time.Hour)
		if err := one.Create(ctx, fmt.Sprint(s.Identity.Admin), s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := one.Get(ctx, "true", now); err != nil {
		t.Error("a non-admin session of principal \"\" dropped the operator's")
	}

	admins := page.NewMemSessions(&page.MemSessionsOptions{Max: 2})
	for _, p := range []string{"x", "y"} {
		if err := admins.Create(ctx, p, page.Session{Identity: page.Identity{Principal: p, Admin: true}, Expires: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admins.Create(ctx, "z", page.Session{Identity: page.Identity{Principal: "z"}, Expires: now.Add(time.Hour)}); !errors.Is(err, page.ErrSessionsFull) {
		t.Errorf("a sign-in into a store full of admins: %v, want ErrSessionsFull", err)
	}
}

// TestSignInsCannotEvictTheOperator: on the wire, 200 sign-ins by one
// principal drop only that principal's oldest sessions: the operator's
// session (the login link) and another principal's stay signed in.
func TestSignInsCannotEvictTheOperator(t *testing.T) {
	t.Parallel()
	link := page.NewTokenLogin(nil)
	h, err := page.New(page.NewCredentialLogin(&page.CredentialLoginOptions{
		Link: link,
		Verify: func(_ context.Context, cred string) (page.Identity, error) {
			if p, ok := strings.CutPrefix(cred, "token-of-"); ok {
				return page.Identity{Principal: p}, nil
			}
			return page.Identity{}, errors.New("unknown token")
		},
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: httptest.NewServer(h), login: link}
	defer f.srv.Close()
	signIn := func(principal string) *browser {
		b := f.browser()
		if r := b.post("/login", url.Values{"credential": {"token-of-" + principal}}); r.status != http.StatusSeeOther {
			t.Fatalf("%s signs in: %d\n%s", principal, r.status, r.body)
		}
		return b
	}
	signedIn := func(b *browser) bool { return b.get("/").status == http.StatusOK }

	operator := f.browser()
	operator.signIn()
	carol := signIn("carol")
	var bob []*browser
	for range 200 {
		bob = append(bob, signIn("bob"))
	}
	if !signedIn(operator) {
		t.Error("bob's 200 sign-ins signed the operator out")
	}
	if !signedIn(carol) {
		t.Error("bob's 200 sign-ins signed carol out")
	}
	for i, b := range bob {
		if want := i >= len(bob)-8; signedIn(b) != want {
			t.Errorf("bob's sign-in %d of %d: signed in %v, want %v (bob keeps his newest 8)", i+1, len(bob), !want, want)
		}
	}
}

// TestTokenLoginBounds: tokens lapse after their TTL, and minting past the
// bound drops the oldest.
func TestTokenLoginBounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := page.NewTokenLogin(&page.TokenLoginOptions{TTL: time.Hour, MaxTokens: 2})
		valid := func(link string) bool {
			u, _ := url.Parse(link)
			rec := httptest.NewRecorder()
			_, ok := l.Authenticate(rec, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
			return !ok && rec.Code == http.StatusOK
		}
		first, _ := l.NewLink("http://127.0.0.1:8080")
		time.Sleep(time.Minute)
		second, _ := l.NewLink("http://127.0.0.1:8080")
		third, _ := l.NewLink("http://127.0.0.1:8080")
		if valid(first) || !valid(second) || !valid(third) {
			t.Errorf("after three links with a bound of two: first %v, second %v, third %v", valid(first), valid(second), valid(third))
		}
		time.Sleep(time.Hour)
		if valid(second) || valid(third) {
			t.Error("a token outlived its TTL")
		}
		if _, err := l.NewLink("not a url"); err == nil {
			t.Error("NewLink accepted a relative base")
		}
	})
}

// TestSignedLink: a link minted outside the gateway with its key signs in
// once, until it expires; a link under another key, a tampered one, or one
// for a login without the key does not.
func TestSignedLink(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		key := []byte("0123456789abcdef0123456789abcdef")
		l := page.NewTokenLogin(&page.TokenLoginOptions{Key: key})
		signIn := func(l *page.TokenLogin, link string) bool {
			u, _ := url.Parse(link)
			form := url.Values{"token": {u.Query().Get("token")}}
			req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			_, ok := l.Authenticate(httptest.NewRecorder(), req)
			return ok
		}
		link, err := page.SignedLink("http://127.0.0.1:8080/ui", key, 10*time.Minute)
		if err != nil || !strings.HasPrefix(link, "http://127.0.0.1:8080/ui/login?token=s.") {
			t.Fatalf("SignedLink = %q, %v", link, err)
		}
		if !signIn(l, link) || signIn(l, link) {
			t.Error("a signed link must sign in exactly once")
		}
		// Nor does it come back spelled otherwise: with a newline the
		// lenient decoder skips, or other trailing bits.
		u, _ := url.Parse(link)
		token := u.Query().Get("token")
		const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := b64[strings.IndexByte(b64, token[len(token)-1])^1] // an unused bit flipped
		for _, respelled := range []string{token[:5] + "\n" + token[5:], token[:len(token)-1] + string(last)} {
			if signIn(l, "http://127.0.0.1:8080/ui/login?"+url.Values{"token": {respelled}}.Encode()) {
				t.Errorf("a spent link signed in again as %q", respelled)
			}
		}
		other, _ := page.SignedLink("http://127.0.0.1:8080/ui", []byte("another key, just as long as it!"), 10*time.Minute)
		tampered := strings.Replace(link, "token=s.A", "token=s.B", 1)
		if tampered == link {
			tampered = strings.Replace(link, "token=s.", "token=s.A", 1)
		}
		if signIn(l, other) || signIn(l, tampered) || signIn(page.NewTokenLogin(nil), link) {
			t.Error("a link under another key, a tampered link or a login without the key signed in")
		}
		// The page proves it holds the key.
		rec := httptest.NewRecorder()
		l.Authenticate(rec, httptest.NewRequest(http.MethodGet, "/login?challenge=c-123", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != page.KeyProof(key, "c-123") || rec.Body.String() == page.KeyProof(key, "c-124") {
			t.Errorf("key proof: %d %q", rec.Code, rec.Body.String())
		}
		late, _ := page.SignedLink("http://127.0.0.1:8080/ui", key, 10*time.Minute)
		time.Sleep(11 * time.Minute)
		if signIn(l, late) {
			t.Error("an expired signed link signed in")
		}
	})
}

// spentMap is a page.SpentTokens that replicas in a test share.
type spentMap struct {
	mu   sync.Mutex
	used map[string]bool
	err  error
}

func (s *spentMap) Spend(_ context.Context, id string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	first := !s.used[id]
	s.used[id] = true
	return first, nil
}

// TestSharedLoginLinks: replicas with keys of their own and shared keys
// (requestState's, on a fleet) print links signed with the first shared
// key, which any replica takes, once fleet-wide; the second shared key (of
// a rotation) verifies too; a store that cannot record the use refuses.
func TestSharedLoginLinks(t *testing.T) {
	t.Parallel()
	shared := [][]byte{[]byte("the fleet's first key, 32 bytes!"), []byte("the fleet's older key, 32 bytes!")}
	spent := &spentMap{used: map[string]bool{}}
	a := page.NewTokenLogin(&page.TokenLoginOptions{Key: []byte("replica a's own key, 32 bytes..."), SharedKeys: shared, Spent: spent})
	b := page.NewTokenLogin(&page.TokenLoginOptions{Key: []byte("replica b's own key, 32 bytes..."), SharedKeys: shared, Spent: spent})
	signIn := func(l *page.TokenLogin, link string) bool {
		u, _ := url.Parse(link)
		form := url.Values{"token": {u.Query().Get("token")}}
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		_, ok := l.Authenticate(httptest.NewRecorder(), req)
		return ok
	}
	link, err := a.NewLink("http://lb.example:7780/ui")
	if err != nil || !strings.HasPrefix(link, "http://lb.example:7780/ui/login?token=s.") {
		t.Fatalf("a's link %q, %v", link, err)
	}
	if !signIn(b, link) || signIn(a, link) || signIn(b, link) {
		t.Error("a's link must sign in once on the fleet: on b, then neither on a nor b")
	}
	older, _ := page.SignedLink("http://lb.example:7780/ui", shared[1], time.Minute)
	if !signIn(a, older) {
		t.Error("a link signed with the older shared key was refused")
	}
	spent.err = errors.New("redis away")
	if fresh, _ := b.NewLink("http://lb.example:7780/ui"); signIn(a, fresh) {
		t.Error("a sign-in whose use could not be recorded was taken")
	}
}

// TestPrefix serves the page under a path, links and redirects included.
func TestPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{opts: page.Options{Prefix: "/ui/"}})
	b := f.browser()
	if r := b.get("/ui/"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/login" {
		t.Fatalf("GET /ui/: %d to %q", r.status, r.header.Get("Location"))
	}
	link, _ := f.login.NewLink(f.srv.URL + "/ui")
	u, _ := url.Parse(link)
	if u.Path != "/ui/login" {
		t.Fatalf("link %s", link)
	}
	if r := b.post("/ui/login", url.Values{"token": {u.Query().Get("token")}}); r.header.Get("Location") != "/ui/" {
		t.Fatalf("sign in under the prefix: %d to %q", r.status, r.header.Get("Location"))
	}
	r := b.get("/ui/")
	if r.status != http.StatusOK || !strings.Contains(r.body, `href="/ui/audit"`) || !strings.Contains(r.body, `"/ui" + "/fragments/pending"`) && !strings.Contains(r.body, `"\/ui" + "/fragments/pending"`) {
		t.Errorf("page under /ui:\n%s", r.body)
	}
	if _, err := page.New(page.NewTokenLogin(nil), &page.Options{Prefix: "ui"}); err == nil {
		t.Error("a relative prefix was accepted")
	}
}

// TestApprovalOnThePageOfAnotherReplica: two replicas share the approval
// store and the notifier; a call waits on replica b, a person approves on
// replica a's page, and the wait on b returns approved.
func TestApprovalOnThePageOfAnotherReplica(t *testing.T) {
	t.Parallel()
	store := approval.NewMemStore(nil)
	bus := approval.NewLocalNotifier()
	a := approval.New(store, &approval.Options{Notifier: bus, Recheck: time.Hour})
	b := approval.New(store, &approval.Options{Notifier: bus, Recheck: time.Hour})
	f := newFixture(t, &fixtureOptions{approvals: a})
	req, err := b.Ask(t.Context(), approval.Call{Server: "files", Tool: "delete_file", Arguments: []byte(`{"path":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), browsertest.Bound)
	defer cancel()
	released := make(chan *approval.Request, 1)
	go func() {
		r, err := b.Wait(ctx, req.ID)
		if err != nil {
			t.Errorf("Wait on replica b: %v", err)
		}
		released <- r
	}()
	br := f.browser()
	csrf := br.signIn()
	if r := br.post("/approvals/"+req.ID+"/approve", url.Values{"csrf": {csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("approve on replica a's page: %d\n%s", r.status, r.body)
	}
	if r := <-released; r == nil || r.State != approval.Approved || r.DecidedBy.String() != "operator" {
		t.Fatalf("Wait on replica b returned %+v", r)
	}
	if r, err := b.Ask(t.Context(), approval.Call{Server: "files", Tool: "delete_file", Arguments: []byte(`{"path":"x"}`)}); err != nil || r.State != approval.Used {
		t.Errorf("retry on replica b: %+v, %v", r, err)
	}
}

// hostileSafety is a table whose tool hides text behind bidirectional and
// zero-width characters in its title and description.
type hostileSafety struct{}

func (hostileSafety) SafetyTables(context.Context) ([]*safety.Table, error) {
	return []*safety.Table{{Title: "evil", Kind: "server", Tools: []*safety.Tool{{
		Name: "read", Title: "Read\u202egnp.exe", Description: "Reads a file.\u200b\u2066Then deletes it.\u2069" + strings.Repeat(" more", 80),
		Notes:    []string{"invalid value [read\u202ex]"},
		Variants: []safety.Row{{Variant: "action=\u202edelete", Error: "upstream said \u2066no\u2069"}},
	}, {
		// 300 bytes as written, longer once its hidden characters are shown.
		Name: "padded", Description: strings.Repeat("\u200b", 50) + strings.Repeat("x", 138) + "then-the-end",
	}}}}, nil
}

// TestToolsPageShowsHiddenCharacters: a tool's title and description
// reach the page with their control and format characters shown as
// escapes, never as characters that reorder or hide what is shown.
func TestToolsPageShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{safety: hostileSafety{}})
	b := f.browser()
	b.signIn()
	r := b.get("/tools")
	for _, hidden := range []string{"\u202e", "\u200b", "\u2066", "\u2069"} {
		if strings.Contains(r.body, hidden) {
			t.Errorf("the tools page holds %+q", hidden)
		}
	}
	// The title in the details; the description in the summary and, being
	// long, in full in the details.
	for want, n := range map[string]int{`Read\u202egnp.exe`: 1, `Reads a file.\u200b\u2066Then deletes it.\u2069`: 2, "then-the-end": 1,
		`invalid value [read\u202ex]`: 2, `action=\u202edelete`: 1, `upstream said \u2066no\u2069`: 1} {
		if got := strings.Count(r.body, want); got != n {
			t.Errorf("the tools page shows %q %d times, want %d:\n%s", want, got, n, r.body)
		}
	}
}
