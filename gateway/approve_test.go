package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// confirmDeletes stands in for the decide stage in these tests: a call
// whose resolution says it deletes (or destroys) is to be confirmed,
// anything else is allowed.
type confirmDeletes struct{}

func (confirmDeletes) Name() string { return "decide" }

func (confirmDeletes) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if r := c.Resolution; r != nil && (r.Hints.Effect == hints.EffectDelete || r.Annotations.DestructiveHint && !r.Annotations.ReadOnlyHint) {
		c.Decision = &call.Decision{Verdict: call.Confirm, Reason: "deletes a file"}
	} else if r != nil {
		c.Decision = &call.Decision{Verdict: call.Allow}
	}
	return next.Serve(ctx, c)
}

// upRecorder is the files upstream over HTTP, recording what reaches it:
// the tools/call requests and every Authorization header.
type upRecorder struct {
	mu    sync.Mutex
	calls int
	auth  []string
	dir   string
}

func (r *upRecorder) toolCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func (r *upRecorder) authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// filesUpstream serves manage_files over streamable HTTP (2026-07-28 and
// 2025-11-25 on one URL) on a directory holding notes.txt.
func filesUpstream(t *testing.T) (string, *upRecorder) {
	t.Helper()
	root := filesDir(t)
	rec := &upRecorder{dir: root.Name()}
	return filesOn(t, root, func(r *http.Request, body []byte) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if v := r.Header.Values("Authorization"); len(v) > 0 {
			rec.auth = append(rec.auth, v...)
		}
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			rec.calls++
		}
	}), rec
}

func (r *upRecorder) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.dir, name))
	return err == nil
}

// approvalGateway is a gateway in front of the files upstream with
// out-of-band approval on, its page at /ui, and deletes confirmed.
type approvalGateway struct {
	g         *gateway.Gateway
	url       string // the MCP endpoint
	base      string // http://ADDR
	approvals *approval.Service
	login     *page.TokenLogin
	up        *upRecorder
}

type approvalSetup struct {
	// decisions: the gateway's own decide, ask and confirmed stages, as
	// preflight serve runs them, instead of confirmDeletes.
	decisions bool
	auth      *auth.Authenticator
	identity  *page.Identity // who signs in with the login link; nil: the operator
	admins    []string
	bearer    string // the upstream's own token, through BearerTokenEnv
	// rules are the decide stage's rules, with decisions.
	rules []stage.DecisionRule
}

func newApprovalGateway(t *testing.T, s approvalSetup) *approvalGateway {
	t.Helper()
	upURL, rec := filesUpstream(t)
	spec := gateway.UpstreamSpec{Name: "files", URL: upURL}
	if s.bearer != "" {
		t.Setenv("FILES_UPSTREAM_TOKEN", s.bearer)
		spec.BearerTokenEnv = "FILES_UPSTREAM_TOKEN"
	}
	ag := &approvalGateway{
		approvals: approval.New(nil, &approval.Options{Admins: s.admins}),
		login:     page.NewTokenLogin(&page.TokenLoginOptions{Identity: s.identity}),
		up:        rec,
	}
	g, err := gateway.New(&gateway.Options{
		Logger:    testLogger(t),
		Upstreams: []gateway.UpstreamSpec{spec},
		Approvals: ag.approvals,
		Page:      &gateway.Page{Login: ag.login},
		Auth:      s.auth,
		Decisions: decisionsIf(s.decisions, s.rules...),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !s.decisions {
		gateway.InsertStage(g, "approve", confirmDeletes{})
	}
	g.Start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("gateway Serve: %v", err)
		}
		g.Close()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), readyTimeout)
	defer wcancel()
	if err := g.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	ag.g, ag.base = g, "http://"+ln.Addr().String()
	ag.url = ag.base + gateway.MCPPath
	// Serve sets the page's URL before it serves: once /healthz answers,
	// it is set.
	if resp, err := http.Get(ag.base + gateway.HealthPath); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if got, want := g.PageURL(), ag.base+gateway.PagePath; got != want {
		t.Fatalf("PageURL %q, want %q", got, want)
	}
	return ag
}

var deleteNotes = map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "delete", "path": "notes.txt"}}

var linkRE = regexp.MustCompile(`http://[^ ]+/ui/approvals/([A-Za-z0-9_-]+)`)

// toolError returns the text of a tool error, failing unless r is one.
func toolErrorText(t *testing.T, r *wiretest.Response) string {
	t.Helper()
	if r.Error != nil || r.Result["isError"] != true {
		t.Fatalf("want a tool error, got %s", r.Raw)
	}
	var b strings.Builder
	content, _ := r.Result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// pendingLink checks that a call got the approval link and returns the
// request's id.
func pendingLink(t *testing.T, text string) string {
	t.Helper()
	m := linkRE.FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, "retry the call with exactly the same arguments") {
		t.Fatalf("the tool error does not say where to approve and to retry: %q", text)
	}
	return m[1]
}

// TestApprovalRetryOnTheWire: a client that cannot be asked (no
// elicitation) calls a delete through the gateway in each era; it gets a
// tool error with the page's link and the upstream is not called; once
// the request is approved the retry with the same arguments runs it, once;
// a retry with other arguments and a second retry ask anew.
func TestApprovalRetryOnTheWire(t *testing.T) {
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			ag := newApprovalGateway(t, approvalSetup{})
			peer := wiretest.Stateless(ag.url, nil)
			if era == legacy {
				peer = wiretest.Legacy(ag.url, nil)
				defer peer.Close()
			}
			read := peer.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "read", "path": "notes.txt"}})
			if r := read.Result; r == nil || r["isError"] == true {
				t.Fatalf("a read is not confirmed: %s", read.Raw)
			}
			before := ag.up.toolCalls()

			id := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", deleteNotes)))
			if ag.up.toolCalls() != before || !ag.up.exists("notes.txt") {
				t.Fatal("the upstream was called before anyone approved")
			}
			again := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", deleteNotes)))
			if again != id {
				t.Errorf("the same call opened a second request %s besides %s", again, id)
			}
			if _, err := ag.approvals.Approve(t.Context(), id, approval.Approver{}); err != nil {
				t.Fatal(err)
			}
			other := peer.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "delete", "path": "full/inner/x.txt"}})
			if pendingLink(t, toolErrorText(t, other)) == id || ag.up.toolCalls() != before {
				t.Fatal("an approval of one call let a call with other arguments run")
			}

			ran := peer.Call(t, "tools/call", deleteNotes)
			if ran.Error != nil || ran.Result["isError"] == true || !strings.Contains(wiretest.MustJSON(ran.Result), "deleted: notes.txt") {
				t.Fatalf("the approved retry: %s", ran.Raw)
			}
			if ag.up.exists("notes.txt") || ag.up.toolCalls() != before+1 {
				t.Fatalf("after the approved retry: file there %v, upstream calls %d (want %d)", ag.up.exists("notes.txt"), ag.up.toolCalls(), before+1)
			}
			if r, _ := ag.approvals.Get(t.Context(), id, ""); r.State != approval.Used {
				t.Errorf("request after the retry: %s", r.State)
			}
			next := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", deleteNotes)))
			if next == id || ag.up.toolCalls() != before+1 {
				t.Fatal("a second retry ran on the used approval")
			}
			if _, err := ag.approvals.Deny(t.Context(), next, approval.Approver{}); err != nil {
				t.Fatal(err)
			}
			denied := toolErrorText(t, peer.Call(t, "tools/call", deleteNotes))
			if !strings.Contains(denied, "was denied") || ag.up.toolCalls() != before+1 {
				t.Errorf("a denied call: %q", denied)
			}
		})
	}
}

// TestApprovalURLElicitationModern: a 2026-07-28 client that declares URL
// elicitation gets input_required with the page's link and a sealed
// requestState; its retry with the state runs the call once approved, and
// the same state presented again does not run it twice. A decline runs
// nothing.
func TestApprovalURLElicitationModern(t *testing.T) {
	for _, decisions := range []bool{false, true} {
		t.Run(fmt.Sprintf("decisions=%v", decisions), func(t *testing.T) { testApprovalURLElicitationModern(t, decisions) })
	}
}

// decisionsIf returns the gateway's decisions with rules, or none.
func decisionsIf(on bool, rules ...stage.DecisionRule) *stage.DecideOptions {
	if on {
		return &stage.DecideOptions{Rules: rules}
	}
	return nil
}

// testApprovalURLElicitationModern: with decisions on, the ask stage (which
// opens every retry's requestState first) and the forwarder leave the
// approve stage's state to it.
func testApprovalURLElicitationModern(t *testing.T, decisions bool) {
	ag := newApprovalGateway(t, approvalSetup{decisions: decisions})
	peer := wiretest.Stateless(ag.url, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	first := peer.Call(t, "tools/call", deleteNotes)
	if first.Error != nil || first.Result["resultType"] != "input_required" {
		t.Fatalf("want input_required, got %s", first.Raw)
	}
	req, _ := first.Result["inputRequests"].(map[string]any)[approval.InputKey].(map[string]any)
	params, _ := req["params"].(map[string]any)
	if req["method"] != "elicitation/create" || params["mode"] != "url" {
		t.Fatalf("input request: %s", wiretest.MustJSON(req))
	}
	link, _ := params["url"].(string)
	m := linkRE.FindStringSubmatch(link)
	state, _ := first.Result["requestState"].(string)
	if m == nil || state == "" || strings.Contains(state, m[1]) {
		t.Fatalf("link %q, requestState %q", link, state)
	}
	id := m[1]
	retry := func(action string) *wiretest.Response {
		p := map[string]any{"name": "manage_files", "arguments": deleteNotes["arguments"], "requestState": state,
			"inputResponses": map[string]any{approval.InputKey: map[string]any{"action": action}}}
		return peer.Call(t, "tools/call", p)
	}
	if _, err := ag.approvals.Approve(t.Context(), id, approval.Approver{}); err != nil {
		t.Fatal(err)
	}
	ran := retry("accept")
	if ran.Error != nil || ran.Result["resultType"] != "complete" || ran.Result["isError"] == true {
		t.Fatalf("the approved retry: %s", ran.Raw)
	}
	if ag.up.exists("notes.txt") || ag.up.toolCalls() != 1 {
		t.Fatalf("after the approved retry: file there %v, upstream calls %d", ag.up.exists("notes.txt"), ag.up.toolCalls())
	}
	replay := toolErrorText(t, retry("accept"))
	if !strings.Contains(replay, "used already") || ag.up.toolCalls() != 1 {
		t.Errorf("the same approved state again: %q, upstream calls %d", replay, ag.up.toolCalls())
	}

	// A decline and a cancel run nothing.
	second := peer.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "delete", "path": "full/inner/x.txt"}})
	state, _ = second.Result["requestState"].(string)
	for _, action := range []string{"decline", "cancel"} {
		p := map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "delete", "path": "full/inner/x.txt"}, "requestState": state,
			"inputResponses": map[string]any{approval.InputKey: map[string]any{"action": action}}}
		text := toolErrorText(t, peer.Call(t, "tools/call", p))
		if !strings.Contains(text, "The server was not called") || !ag.up.exists("full/inner/x.txt") || ag.up.toolCalls() != 1 {
			t.Errorf("%s: %q", action, text)
		}
	}
	// A forged state is refused as the bridge refuses one.
	forged := peer.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": deleteNotes["arguments"], "requestState": state + "x"})
	if forged.Error == nil || forged.Error.Code != -32602 {
		t.Errorf("forged requestState: %s", forged.Raw)
	}
}

// TestApprovalURLElicitationLegacy: a 2025-11-25 session that declares URL
// elicitation is asked mid-call with the page's link; the call waits while
// the person approves, then runs, and the client is told the elicitation
// completed. A decline runs nothing.
func TestApprovalURLElicitationLegacy(t *testing.T) {
	ag := newApprovalGateway(t, approvalSetup{})
	var (
		mu       sync.Mutex
		asked    []*mcp.ElicitParams
		complete = make(chan string, 4)
		decline  bool
	)
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			d := decline
			mu.Unlock()
			if d {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			// The person opens the page and approves while the call waits.
			m := linkRE.FindStringSubmatch(req.Params.URL)
			if m == nil || req.Params.ElicitationID != m[1] {
				return nil, errors.New("no approval link")
			}
			if _, err := ag.approvals.Approve(ctx, m[1], approval.Approver{}); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			complete <- req.Params.ElicitationID
		},
	}
	cs := connect(t, ag.url, legacy, nil, opts)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "manage_files", Arguments: deleteNotes["arguments"]})
	if err != nil || res.IsError || !strings.Contains(contentText(t, res), "deleted: notes.txt") {
		t.Fatalf("the call approved mid-call: %v %+v", err, res)
	}
	if ag.up.exists("notes.txt") || ag.up.toolCalls() != 1 {
		t.Fatal("the approved call did not run once")
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Mode != "url" {
		t.Errorf("asked %+v", asked)
	}
	id := asked[0].ElicitationID
	decline = true
	mu.Unlock()
	if got := <-complete; got != id {
		t.Errorf("elicitation complete for %q, want %q", got, id)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "manage_files", Arguments: map[string]any{"action": "delete", "path": "full/inner/x.txt"}})
	if err != nil || !res.IsError || !strings.Contains(contentText(t, res), "declined") || !ag.up.exists("full/inner/x.txt") || ag.up.toolCalls() != 1 {
		t.Errorf("a declined call: %v %+v", err, res)
	}
}

// pageClient is a person's browser on the gateway's page, without
// JavaScript: a cookie jar, same-origin form posts.
type pageClient struct {
	t      *testing.T
	base   string
	client *http.Client
}

func newPageClient(t *testing.T, base string) *pageClient {
	jar, _ := cookiejar.New(nil)
	return &pageClient{t: t, base: base, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (p *pageClient) do(method, path string, form url.Values) (int, string) {
	p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, p.base+path, body)
	if err != nil {
		p.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", p.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn follows a login link and returns the session's CSRF token.
func (p *pageClient) signIn(link string) string {
	p.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		p.t.Fatal(err)
	}
	if st, body := p.do(http.MethodGet, u.RequestURI(), nil); st != http.StatusOK {
		p.t.Fatalf("login link: %d %s", st, body)
	}
	if st, body := p.do(http.MethodPost, gateway.PagePath+"/login", url.Values{"token": {u.Query().Get("token")}}); st != http.StatusSeeOther {
		p.t.Fatalf("sign in: %d %s", st, body)
	}
	st, body := p.do(http.MethodGet, gateway.PagePath+"/", nil)
	m := csrfRE.FindStringSubmatch(body)
	if st != http.StatusOK || m == nil {
		p.t.Fatalf("page after signing in: %d %s", st, body)
	}
	return m[1]
}
