package page_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

// fixture is a page served on loopback over real HTTP, with real
// approvals, a real SQLite audit log, safety tables from a catalog in the
// repository, and pins held in memory.
type fixture struct {
	t         *testing.T
	srv       *httptest.Server
	login     *page.TokenLogin
	approvals *approval.Service
	audit     *sqlstore.Store
	pins      *memPins
}

type fixtureOptions struct {
	identity *page.Identity
	admins   []string
	tls      bool
	opts     page.Options
	// approvals, if set, is the replica's approval service.
	approvals *approval.Service
	// safety, if set, gives the tools page its tables (the filesystem
	// server's catalog otherwise).
	safety page.Safety
}

func newFixture(t *testing.T, fo *fixtureOptions) *fixture {
	t.Helper()
	if fo == nil {
		fo = &fixtureOptions{}
	}
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "audit.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	approvals := fo.approvals
	if approvals == nil {
		approvals = approval.New(nil, &approval.Options{Admins: fo.admins})
	}
	f := &fixture{
		t:         t,
		login:     page.NewTokenLogin(&page.TokenLoginOptions{Identity: fo.identity}),
		approvals: approvals,
		audit:     store,
		pins:      newMemPins(),
	}
	opts := fo.opts
	opts.Approvals, opts.Audit, opts.Safety, opts.Pins = f.approvals, store, catalogSafety{t}, f.pins
	if fo.safety != nil {
		opts.Safety = fo.safety
	}
	h, err := page.New(f.login, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if fo.tls {
		f.srv = httptest.NewTLSServer(h)
	} else {
		f.srv = httptest.NewServer(h)
	}
	t.Cleanup(f.srv.Close)
	return f
}

// port is the port the fixture's page is served on.
func (f *fixture) port() string {
	u, _ := url.Parse(f.srv.URL)
	return u.Port()
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so the tests see each one.
type browser struct {
	f      *fixture
	client *http.Client
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: f.srv.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{f: f, client: c}
}

// response is a read response.
type response struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) response {
	b.f.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.f.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(path string) response {
	b.f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.f.srv.URL+path, nil)
	if err != nil {
		b.f.t.Fatal(err)
	}
	return b.do(req)
}

// post sends a form as a browser on the page does (same-origin headers).
func (b *browser) post(path string, form url.Values, headers ...string) response {
	b.f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.f.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return b.do(req)
}

// signIn walks the login link and returns the page's CSRF token.
func (b *browser) signIn() string {
	b.f.t.Helper()
	link, err := b.f.login.NewLink(b.f.srv.URL)
	if err != nil {
		b.f.t.Fatal(err)
	}
	u, _ := url.Parse(link)
	token := u.Query().Get("token")
	if r := b.get(u.RequestURI()); r.status != http.StatusOK || !strings.Contains(r.body, `value="`+token+`"`) {
		b.f.t.Fatalf("login link: %d\n%s", r.status, r.body)
	}
	if r := b.post("/login", url.Values{"token": {token}}); r.status != http.StatusSeeOther {
		b.f.t.Fatalf("sign in: %d\n%s", r.status, r.body)
	}
	r := b.get("/")
	if r.status != http.StatusOK {
		b.f.t.Fatalf("front page after signing in: %d\n%s", r.status, r.body)
	}
	return csrfOf(b.f.t, r.body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

// ask opens an approval request as the gateway's ask stage would.
func (f *fixture) ask(principal, tool, args string) *approval.Request {
	f.t.Helper()
	r, err := f.approvals.Ask(context.Background(), approval.Call{
		Principal: principal, Server: "files", Tool: tool, Arguments: json.RawMessage(args),
		Effect: hints.EffectDelete, Reason: "deletes a file", Matter: []string{"path"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) state(id, principal string) approval.State {
	f.t.Helper()
	r, err := f.approvals.Get(context.Background(), id, principal)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.State
}

// record writes a finished call to the audit log.
func (f *fixture) record(principal, tool string, effect hints.Effect, d audit.Decision, at time.Time) {
	f.t.Helper()
	err := f.audit.Write(context.Background(), []*audit.Record{{
		Time: at, Principal: principal, Server: "files", Tool: tool, Effect: effect, Decision: d,
		Reason: "rule " + string(d), Level: audit.LevelSummary, ArgsDigest: "digest-" + tool,
		Outcome: audit.OutcomeOK, Ended: at.Add(3 * time.Millisecond), Latency: 3 * time.Millisecond,
	}})
	if err != nil {
		f.t.Fatal(err)
	}
}

// catalogSafety gives the safety table of the filesystem server's catalog
// in the repository's testdata.
type catalogSafety struct{ t *testing.T }

func (c catalogSafety) SafetyTables(context.Context) ([]*safety.Table, error) {
	target, err := lint.ReadCatalog(filepath.Join("..", "..", "..", "testdata", "catalogs", "server-filesystem.json"))
	if err != nil {
		return nil, err
	}
	return []*safety.Table{safety.FromTarget(target)}, nil
}

// memPins holds pins in memory, as the pin store will.
type memPins struct {
	mu   sync.Mutex
	pins []page.Pin
	by   []page.Identity
}

func newMemPins() *memPins {
	now := time.Now().Add(-48 * time.Hour)
	return &memPins{pins: []page.Pin{
		{Server: "files", Tool: "read_file", Mode: "strict", Digest: "sha256-read-aaaaaaaaaaaa", PinnedAt: now},
		{Server: "files", Tool: "delete_file", Mode: "strict", Digest: "sha256-del-bbbbbbbbbbbb", PinnedAt: now,
			Quarantined: true, Candidate: "sha256-del-cccccccccccc", Seen: now.Add(47 * time.Hour),
			Changes: []string{"destructiveHint: true -> false", "description changed"}},
	}}
}

func (m *memPins) Pins(context.Context) ([]page.Pin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]page.Pin(nil), m.pins...), nil
}

func (m *memPins) ApprovePin(_ context.Context, server, tool, candidate string, by page.Identity) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, p := range m.pins {
		if p.Server == server && p.Tool == tool && p.Quarantined {
			if p.Candidate != candidate {
				return errors.New("the definition changed again; review it anew")
			}
			m.pins[i] = page.Pin{Server: server, Tool: tool, Mode: p.Mode, Digest: candidate, PinnedAt: time.Now(), PinnedBy: by.Display()}
			m.by = append(m.by, by)
			return nil
		}
	}
	return errors.New("no such quarantined tool")
}
