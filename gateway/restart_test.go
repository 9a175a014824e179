package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// childEnv makes the test binary run as a stdio MCP server: it serves
// "hello" (answers its process id) and "crash" (exits at once). If the
// file named by childRefuseEnv exists when it starts, it exits before
// answering anything, as a server that keeps failing would.
const (
	childEnv       = "PREFLIGHT_GATEWAY_TEST_CHILD"
	childRefuseEnv = "PREFLIGHT_GATEWAY_TEST_REFUSE"
)

func runChildServer() int {
	if os.Getenv(ledgerEnv) != "" {
		return runLedgerServer()
	}
	if os.Getenv(streamerEnv) != "" {
		return runStreamer()
	}
	if f := os.Getenv(childRefuseEnv); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "child refusing to start")
			return 3
		}
	}
	fmt.Fprintf(os.Stderr, "child started pid %d\n", os.Getpid())
	s := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(4)
		return nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// childSpec starts the test binary as the child server.
func childSpec(t testing.TB, name, refuse string) gateway.UpstreamSpec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return gateway.UpstreamSpec{
		Name: name, Command: exe, Args: []string{"-test.run=^$"},
		Env:     map[string]string{childEnv: "1", childRefuseEnv: refuse},
		Dir:     t.TempDir(),
		Restart: upstream.Restart{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Budget: 1000},
	}
}

// recorder is a slog handler that keeps the records, for tests.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	r.mu.Lock()
	r.recs = append(r.recs, b.String())
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &withAttrs{r, attrs}
}
func (r *recorder) WithGroup(string) slog.Handler { return r }
func (r *recorder) find(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.recs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

type withAttrs struct {
	r     *recorder
	attrs []slog.Attr
}

func (w *withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w *withAttrs) Handle(ctx context.Context, rec slog.Record) error {
	rec.AddAttrs(w.attrs...)
	return w.r.Handle(ctx, rec)
}
func (w *withAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &withAttrs{w.r, append(append([]slog.Attr(nil), w.attrs...), attrs...)}
}
func (w *withAttrs) WithGroup(string) slog.Handler { return w }

// waitView waits until cond holds of the gateway's catalog.
func waitView(t *testing.T, g *gateway.Gateway, what string, cond func(names []string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		changed := g.Changed()
		var names []string
		for _, tl := range g.View().Tools {
			names = append(names, tl.Exposed)
		}
		if cond(names) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: tools are %v", what, names)
		}
	}
}

func has(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// TestUpstreamRestart kills a stdio upstream mid-run: its tools disappear
// from the catalog (clients get tools/list_changed) while it cannot start,
// the other upstream keeps serving, and once it can start again the gateway
// restarts it and its tools come back (another list_changed). Its stderr
// reaches the log line by line.
func TestUpstreamRestart(t *testing.T) {
	t.Parallel()
	refuse := filepath.Join(t.TempDir(), "refuse")
	rec := &recorder{}
	g, url := startGateway(t, &gateway.Options{Logger: slog.New(rec), Upstreams: []gateway.UpstreamSpec{
		childSpec(t, "proc", refuse),
		{Name: "files", URL: filesServer(t)},
	}})
	changes := make(chan struct{}, 100)
	cs := connect(t, url, legacy, nil, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes <- struct{}{} }})
	ctx := context.Background()
	hello := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "proc__hello", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("hello: %v %v", res, err)
		}
		return contentText(t, res)
	}
	pid1 := hello()
	if !rec.find("upstream stderr line=child started pid " + pid1) {
		t.Errorf("the child's stderr line is not in the log")
	}

	if err := os.WriteFile(refuse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "proc__crash", Arguments: map[string]any{}}); err == nil {
		t.Error("crash returned without an error")
	}
	waitView(t, g, "the dead upstream's tools to go", func(n []string) bool { return !has(n, "proc__hello") && has(n, "files__manage_files") })
	<-changes
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__manage_files", Arguments: map[string]any{"path": "notes.txt", "action": "read"}})
	if err != nil || res.IsError {
		t.Errorf("the other upstream while one is down: %v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "proc__hello", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Errorf("a tool of the dead upstream answered: %v", res)
	}
	// Wait for a start that fails (a refusal in the log), then check
	// health says so.
	waitFor(t, g, "a failed start", func() bool { return rec.find("child refusing to start") && rec.find("upstream connection failed") })
	for _, h := range g.Health().Upstreams {
		if h.Name == "proc" && (h.State == upstream.StateUp || h.LastError == "") {
			t.Errorf("health while proc cannot start: %+v", h)
		}
	}

	if err := os.Remove(refuse); err != nil {
		t.Fatal(err)
	}
	waitView(t, g, "the restarted upstream's tools", func(n []string) bool { return has(n, "proc__hello") })
	<-changes
	if pid2 := hello(); pid2 == pid1 {
		t.Errorf("same process after the restart: %s", pid2)
	}
	for _, h := range g.Health().Upstreams {
		if h.Name == "proc" && (h.State != upstream.StateUp || h.Restarts < 1) {
			t.Errorf("health after the restart: %+v", h)
		}
	}
}

// waitFor waits until cond holds, checking at every change of the gateway.
func waitFor(t *testing.T, g *gateway.Gateway, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		changed := g.Changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s", what)
		}
	}
}
