package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

func TestServeHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runMain(t, "help", "serve")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	golden(t, "help-serve.golden", out)
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeBuiltin runs "preflight serve" with the built-in setup on a
// fresh data directory: it prints the URL, serves both example servers'
// tools prefixed, answers calls in both eras with one JSON log record per
// call, reports health, and stops cleanly (exit 0) when interrupted.
func TestServeBuiltin(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	url, out, stderr, stop := runServe(t, "-http", "127.0.0.1:0", "-data", data)
	for _, want := range []string{"files    up", "folders  up", "4 tools", "claude mcp add --transport http preflight " + url, "stores:\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Where the state is kept, and that each store answers.
	for _, s := range []string{"state +memory", "pins +sqlite " + regexp.QuoteMeta(filepath.Join(data, "pins.db")), "audit +sqlite " + regexp.QuoteMeta(filepath.Join(data, "audit.db")),
		"approvals +sqlite " + regexp.QuoteMeta(filepath.Join(data, "approvals.db"))} {
		if !regexp.MustCompile(`(?m)^  ` + s + ` +up$`).MatchString(out) {
			t.Errorf("output lacks the store %q, up:\n%s", s, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); err != nil {
		t.Errorf("the data directory was not seeded: %v", err)
	}
	base := strings.TrimSuffix(url, gateway.MCPPath)
	lm := regexp.MustCompile(`(?m)^  (` + regexp.QuoteMeta(base) + `/ui/login\?token=(\S+))$`).FindStringSubmatch(out)
	if lm == nil || !strings.Contains(out, "wait for approval at "+base+"/ui/") {
		t.Fatalf("no approval page or login link printed:\n%s", out)
	}
	signInWith(t, base, lm[1], lm[2])

	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		r := p.Call(t, "tools/list", nil)
		var names []string
		for _, tl := range r.Result["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		if got := strings.Join(names, ","); got != "files__manage_files,folders__delete_folder,folders__describe_folder,folders__rename_folder" {
			t.Errorf("%s tools = %s", p.Version, got)
		}
		r = p.Call(t, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}})
		if r.Error != nil || !strings.Contains(string(r.Raw), "Notes kept by the manage_files example") {
			t.Errorf("%s call: %s", p.Version, r.Raw)
		}
		p.Close()
	}
	// The tools are pinned in the data directory, and the output says how
	// to review them.
	if !strings.Contains(out, "review them with: preflight pins -store sqlite:"+filepath.Join(data, "pins.db")+" list") {
		t.Errorf("output does not say where the pins are:\n%s", out)
	}
	if code, pins, errOut := runMain(t, "pins", "-store", "sqlite:"+filepath.Join(data, "pins.db"), "-server", "folders", "list"); code != exitOK ||
		strings.Count(pins, " pinned ") != 3 {
		t.Errorf("pins of the built-in setup: exit %d\n%s%s", code, pins, errOut)
	}

	resp, err := http.Get(strings.TrimSuffix(url, gateway.MCPPath) + gateway.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	var h gateway.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || h.Status != "ok" || len(h.Upstreams) != 2 || h.Tools != 4 {
		t.Errorf("health: %d %+v %v", resp.StatusCode, h, err)
	}
	keeps := map[string]string{}
	for _, s := range h.Stores {
		if s.Up {
			keeps[s.Keeps] = s.At
		}
	}
	if keeps["state"] != "memory" || keeps["pins"] != "sqlite "+filepath.Join(data, "pins.db") || keeps["audit"] == "" || keeps["approvals"] == "" {
		t.Errorf("health: stores %+v", h.Stores)
	}

	if code := stop(); code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}

	// One JSON record per call, with what operations need.
	var calls []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == "call" {
			calls = append(calls, rec)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d call records, want 2:\n%s", len(calls), stderr.String())
	}
	for i, era := range []string{"2026-07-28", "2025-11-25"} {
		c := calls[i]
		if c["server"] != "files" || c["tool"] != "files__manage_files" || c["era"] != era || c["outcome"] != "ok" {
			t.Errorf("call record %d = %v", i, c)
		}
		if _, ok := c["latencyMs"].(float64); !ok {
			t.Errorf("call record %d has no latency: %v", i, c)
		}
	}

	// The audit log, in the data directory, has both calls: preflight
	// audit -data reads what serve wrote (and flushed when it stopped).
	code, aout, aerr := runMain(t, "audit", "-data", data, "-format", "jsonl")
	if code != exitOK {
		t.Fatalf("audit: exit %d: %s", code, aerr)
	}
	lines := strings.Split(strings.TrimSpace(aout), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit: %d records, want 2:\n%s", len(lines), aout)
	}
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r["server"] != "files" || r["tool"] != "manage_files" || r["effect"] != "read" || r["decision"] != "allow" || r["outcome"] != "ok" {
			t.Errorf("audit record %s", l)
		}
	}
}

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra"}, "serve takes no arguments"},
		{[]string{"serve", "-log-level", "loud"}, `-log-level "loud"`},
		{[]string{"serve", "-config", "x.yaml", "-data", "d"}, "-data is for the built-in setup"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestServeConfigSeam checks that -config goes through the command's
// configuration watcher and that a first load that fails is the command's
// error.
func TestServeConfigSeam(t *testing.T) {
	t.Parallel()
	var asked string
	c := &serveCmd{addr: addrFlag{value: "127.0.0.1:0"}, config: "servers.json", logLevel: "info",
		watch: func(_ context.Context, path string, _ *config.WatchOptions, _ func(*config.Config, error)) error {
			asked = path
			return io.ErrUnexpectedEOF
		}}
	err := c.run(context.Background(), &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: newTermWriter(io.Discard, textOutput)}, invocation{})
	if asked != "servers.json" || err == nil || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Errorf("watcher asked for %q, run returned %v", asked, err)
	}
}

// signInWith signs in to the page with a printed login link, as a browser
// would, and checks that the page then shows the pending approvals; the
// link works once.
func signInWith(t *testing.T, base, link, token string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func() int {
		req, _ := http.NewRequest(http.MethodPost, base+"/ui/login", strings.NewReader(neturl.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st, body := get(link); st != http.StatusOK || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("login link: %d\n%s", st, body)
	}
	if st := post(); st != http.StatusSeeOther {
		t.Fatalf("sign in: %d", st)
	}
	if st, body := get(base + "/ui/"); st != http.StatusOK || !strings.Contains(body, "waiting for your approval") {
		t.Fatalf("page after signing in: %d\n%s", st, body)
	}
	if st := post(); st == http.StatusSeeOther {
		t.Error("the login link signed in twice")
	}
}

// startServe runs "preflight serve" with args on a fresh data directory
// and returns its MCP URL, its data directory, its log, and a function
// that stops it and returns its exit code.
func startServe(t *testing.T, args ...string) (url, data string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	url, data, _, stderr, stop = startServePrinted(t, args...)
	return url, data, stderr, stop
}

// runServe runs "preflight serve" with args (after "serve") until the test
// ends, reads what it prints until it says how to stop it, and returns
// its MCP URL, what it printed, its log, and a function that stops it and
// returns its exit code.
func runServe(t *testing.T, args ...string) (url, printedOut string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	stderr = &lockedBuffer{}
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, append([]string{"serve"}, args...), strings.NewReader(""), outW, stderr)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	var printed strings.Builder
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Stop with") {
			break
		}
	}
	go io.Copy(io.Discard, outR)
	var once sync.Once
	code := 0
	stop = func() int {
		once.Do(func() { cancel(); code = <-exited })
		return code
	}
	t.Cleanup(func() { stop() })
	m := regexp.MustCompile(`serving MCP at (http://\S+/mcp)`).FindStringSubmatch(printed.String())
	if m == nil {
		stop()
		t.Fatalf("no URL printed:\n%s\nstderr:\n%s", printed.String(), stderr.String())
	}
	return m[1], printed.String(), stderr, stop
}

// startServePrinted runs "preflight serve" with args on a fresh data
// directory (runServe) and returns its data directory too.
func startServePrinted(t *testing.T, args ...string) (url, data, printedOut string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	url, printedOut, stderr, stop = runServe(t, append([]string{"-http", "127.0.0.1:0", "-data", data}, args...)...)
	return url, data, printedOut, stderr, stop
}

// TestServeDecisions checks that serve decides every call: a delete by a
// client that cannot be asked is refused with the reason and the file
// stays; with -dry-run the same delete runs and the log records the
// decision that was not enforced.
func TestServeDecisions(t *testing.T) {
	t.Parallel()
	del := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "delete"}}
	t.Run("enforce", func(t *testing.T) {
		url, data, _, _ := startServe(t)
		r := wiretest.Stateless(url, nil).Call(t, "tools/call", del)
		if r.Error != nil || r.Result["isError"] != true || !strings.Contains(string(r.Raw), "needs a person's approval") {
			t.Errorf("delete: %s", r.Raw)
		}
		if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); err != nil {
			t.Errorf("the refused delete ran: %v", err)
		}
	})
	t.Run("dry-run", func(t *testing.T) {
		url, data, stderr, stop := startServe(t, "-dry-run")
		r := wiretest.Stateless(url, nil).Call(t, "tools/call", del)
		if r.Error != nil || r.Result["isError"] == true {
			t.Errorf("delete: %s", r.Raw)
		}
		if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); !os.IsNotExist(err) {
			t.Errorf("the dry-run delete did not run: %v", err)
		}
		if code := stop(); code != exitOK {
			t.Errorf("exit %d", code)
		}
		var found bool
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			var rec struct {
				Msg      string
				Decision struct {
					Verdict, Reason string
					DryRun          bool
				}
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "call" {
				found = rec.Decision.Verdict == "confirm" && rec.Decision.DryRun && strings.Contains(rec.Decision.Reason, "the call deletes")
			}
		}
		if !found {
			t.Errorf("no call record with the decision not enforced:\n%s", stderr.String())
		}
	})
}

// TestServeStdioDesktop runs "preflight serve -stdio" as a desktop client
// starts it: the client's first tools/list, right after initialize, has
// every tool of the built-in setup (serve waits for its upstreams first);
// a read runs; a delete, which this client cannot be asked to confirm,
// waits for approval on the page, whose link the tool error gives and
// whose address and login link are in the log (standard error), never on
// the protocol's standard output.
func TestServeStdioDesktop(t *testing.T) {
	t.Parallel()
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			ctx, cancel := context.WithCancel(context.Background())
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			stderr := &lockedBuffer{}
			exited := make(chan int, 1)
			go func() {
				exited <- Main(ctx, []string{"serve", "-stdio", "-data", data}, inR, outW, stderr)
				outW.Close()
			}()
			defer func() {
				inW.Close()
				cancel()
				<-exited
			}()
			client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) < 4 {
				t.Fatalf("first tools/list: %v tools, %v\nstderr:\n%s", toolCount(tools), err, stderr.String())
			}
			read, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__manage_files", Arguments: map[string]any{"action": "read", "path": "notes.txt"}})
			if err != nil || read.IsError {
				t.Fatalf("read: %+v %v", read, err)
			}
			del, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__manage_files", Arguments: map[string]any{"action": "delete", "path": "notes.txt"}})
			if err != nil || !del.IsError {
				t.Fatalf("delete: %+v %v", del, err)
			}
			text := del.Content[0].(*mcp.TextContent).Text
			page := regexp.MustCompile(`http://127\.0\.0\.1:\d+/ui\S*`).FindString(text)
			if page == "" {
				t.Errorf("the held delete gives no link to the page: %q", text)
			}
			if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); err != nil {
				t.Errorf("the held delete ran: %v", err)
			}
			log := stderr.String()
			if !strings.Contains(log, `"login":"http://127.0.0.1:`) || !strings.Contains(log, `"page":"http://127.0.0.1:`) {
				t.Errorf("the log does not say where to approve:\n%s", log)
			}
			if !strings.Contains(log, `"stores":[{"keeps":"state","at":"memory","up":true}`) || !strings.Contains(log, `{"keeps":"approvals","at":"sqlite `) {
				t.Errorf("the log does not say where the state is kept:\n%s", log)
			}
		})
	}
}

func toolCount(r *mcp.ListToolsResult) int {
	if r == nil {
		return 0
	}
	return len(r.Tools)
}

// TestServeStdioWaitsForUpstreams: an upstream that takes a second to start
// (as npx servers do) is listed in the desktop client's first tools/list,
// right after initialize, because serve -stdio waits for its upstreams
// before it answers; without the wait the list was empty and a call of
// the tool got "unknown tool".
func TestServeStdioWaitsForUpstreams(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("servers:\n  slow:\n    command: sh\n    args: [\"-c\", \"sleep 1 && exec %s -dir %s\"]\npins:\n  path: %s\naudit:\n  path: %s\n",
		firstwins.Build(t), dir, filepath.Join(t.TempDir(), "pins.db"), filepath.Join(t.TempDir(), "audit.db"))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"serve", "-stdio", "-config", cfg}, inR, outW, stderr)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		cancel()
		<-exited
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || toolCount(tools) != 1 || tools.Tools[0].Name != "files" {
		t.Fatalf("first tools/list: %+v, %v\nstderr:\n%s", tools, err, stderr.String())
	}
	// The rig's tool declares itself destructive, so the call waits for
	// approval; what matters is that the gateway knows the tool.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files", Arguments: map[string]any{"action": "read", "path": "a.txt"}})
	if err != nil || len(res.Content) == 0 || strings.Contains(res.Content[0].(*mcp.TextContent).Text, "unknown tool") {
		t.Fatalf("call: %+v %v", res, err)
	}
}

// TestServeReset: -reset puts the examples' files back as they were at
// first, so the README's walkthrough can start over; the audit log stays.
func TestServeReset(t *testing.T) {
	url, data, _, stop := startServe(t)
	read := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}}
	if r := wiretest.Stateless(url, nil).Call(t, "tools/call", read); r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("read: %s", r.Raw)
	}
	stop()
	notes := filepath.Join(data, "files", "notes.txt")
	if err := os.Remove(notes); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(data, "files", "left-over.txt"), "x")
	_, _, _, stop = runServe(t, "-http", "127.0.0.1:0", "-data", data, "-reset")
	stop()
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("notes.txt after -reset: %v", err)
	}
	if exists(t, filepath.Join(data, "files", "left-over.txt")) {
		t.Error("-reset left a file the examples did not have")
	}
	code, out, errOut := runMain(t, "audit", "-data", data, "-format", "jsonl")
	if code != exitOK || !strings.Contains(out, `"manage_files"`) {
		t.Errorf("the audit log after -reset: exit %d %s%s", code, out, errOut)
	}
	if code, _, errOut := runMain(t, "serve", "-config", "x.yaml", "-reset"); code != exitUsage || !strings.Contains(errOut, "-reset is for the built-in setup") {
		t.Errorf("-reset with -config: exit %d %s", code, errOut)
	}
}
