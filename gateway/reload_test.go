package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// drainSignals empties c.
func drainSignals(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// within waits for c, failing the test if it takes longer than
// readyTimeout (a bound on a hang, not a timed assertion).
func within(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(readyTimeout):
		t.Fatalf("waiting for %s", what)
	}
}

func reload(t *testing.T, g *gateway.Gateway, opts *gateway.Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.Reload(ctx, opts); err != nil {
		t.Fatal(err)
	}
}

// TestReloadUpstreams reloads a gateway in front of two stdio upstreams:
// one unchanged (its process keeps serving, same pid), one with changed
// arguments (replaced: a new process), and an HTTP upstream added (its
// tools appear, and a connected legacy client gets tools/list_changed).
// A second reload removes the added one: its tools go, with another
// list_changed.
func TestReloadUpstreams(t *testing.T) {
	t.Parallel()
	keep, change := childSpec(t, "keep", ""), childSpec(t, "change", "")
	opts := &gateway.Options{Upstreams: []gateway.UpstreamSpec{keep, change}}
	g, url := startGateway(t, opts)
	changes := make(chan struct{}, 100)
	cs := connect(t, url, legacy, nil, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes <- struct{}{} }})
	ctx := context.Background()
	hello := func(name string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, res, err)
		}
		return contentText(t, res)
	}
	keepPid, changePid := hello("keep__hello"), hello("change__hello")
	drainSignals(changes)

	changed := change
	changed.Args = append([]string{"-test.v=false"}, change.Args...)
	changed.Env = maps.Clone(change.Env)
	files := gateway.UpstreamSpec{Name: "files", URL: filesServer(t)}
	reload(t, g, &gateway.Options{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{keep, changed, files}})
	waitView(t, g, "the added upstream's tools", func(n []string) bool { return has(n, "files__manage_files") && has(n, "change__hello") })
	within(t, changes, "tools/list_changed after an upstream was added")

	if pid := hello("keep__hello"); pid != keepPid {
		t.Errorf("the unchanged upstream was restarted: pid %s, then %s", keepPid, pid)
	}
	if pid := hello("change__hello"); pid == changePid {
		t.Errorf("the upstream whose arguments changed was not replaced: pid %s", pid)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__manage_files", Arguments: map[string]any{"path": "notes.txt", "action": "read"}})
	if err != nil || res.IsError || !strings.Contains(contentText(t, res), "hello from the files upstream") {
		t.Errorf("the added upstream's tool: %v %v", res, err)
	}
	var names []string
	for _, h := range g.Health().Upstreams {
		names = append(names, h.Name)
	}
	if strings.Join(names, ",") != "keep,change,files" {
		t.Errorf("health lists %v", names)
	}

	drainSignals(changes)
	reload(t, g, &gateway.Options{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{keep, changed}})
	waitView(t, g, "the removed upstream's tools to go", func(n []string) bool { return !has(n, "files__manage_files") })
	within(t, changes, "tools/list_changed after an upstream was removed")
	if pid := hello("keep__hello"); pid != keepPid {
		t.Errorf("the unchanged upstream was restarted by the second reload: pid %s, then %s", keepPid, pid)
	}
}

// slowServer serves "slow", which tells entered it started and answers
// "done" when release is closed.
func slowServer(entered chan<- struct{}, release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	return s
}

// TestReloadRemoveInFlight removes an upstream while a call to it runs:
// the call finishes with its result, a new call gets "unknown tool" at
// once, and the upstream's session is closed only after the call ended.
// Both client eras.
func TestReloadRemoveInFlight(t *testing.T) {
	t.Parallel()
	for _, era := range []string{legacy, modern} {
		t.Run(era, func(t *testing.T) {
			entered, release := make(chan struct{}, 1), make(chan struct{})
			slow := slowServer(entered, release)
			t.Cleanup(func() {
				for ss := range slow.Sessions() {
					ss.Close()
				}
			})
			slowURL := serveHTTP(t, endpoint.NewHandler(slow, nil))
			files := gateway.UpstreamSpec{Name: "files", URL: filesServer(t)}
			// A legacy upstream, whose session shows when the gateway
			// lets go of it.
			opts := &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "slow", URL: slowURL, Era: legacy}, files}}
			g, url := startGateway(t, opts)
			var session *mcp.ServerSession
			for ss := range slow.Sessions() {
				session = ss
			}
			if session == nil {
				t.Fatal("no upstream session")
			}
			ended := make(chan struct{})
			go func() { _ = session.Wait(); close(ended) }()

			cs := connect(t, url, era, nil, nil)
			ctx := context.Background()
			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__slow", Arguments: map[string]any{}})
				done <- outcome{res, err}
			}()
			within(t, entered, "the call to reach the upstream")

			reload(t, g, &gateway.Options{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{files}})
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__slow", Arguments: map[string]any{}})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("a new call to the removed upstream: %v, want unknown tool", err)
			}
			select {
			case <-ended:
				t.Fatal("the removed upstream's session was closed with a call in flight")
			default:
			}
			close(release)
			o := <-done
			if o.err != nil || o.res.IsError || contentText(t, o.res) != "done" {
				t.Errorf("the call in flight: %v %v", o.res, o.err)
			}
			within(t, ended, "the removed upstream's session to close")
			for _, h := range g.Health().Upstreams {
				if h.Name == "slow" {
					t.Errorf("health still lists the removed upstream: %+v", h)
				}
			}
		})
	}
}

// lastCall returns the last "call" record of rec for tool.
func lastCall(rec *recorder, tool string) string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := len(rec.recs) - 1; i >= 0; i-- {
		if r := rec.recs[i]; strings.HasPrefix(r, "call ") && strings.Contains(r, "tool="+tool+" ") {
			return r
		}
	}
	return ""
}

// TestReloadRules reloads the deployer's rules: the next call is resolved
// by the new ones, without the upstream being touched.
func TestReloadRules(t *testing.T) {
	proc := childSpec(t, "proc", "")
	yes, no := true, false
	resolver := func(readOnly bool) *setup.RulesResolver {
		p := rules.AnnotationPatch{ReadOnlyHint: &yes, DestructiveHint: &no}
		if !readOnly {
			p = rules.AnnotationPatch{ReadOnlyHint: &no, DestructiveHint: &yes}
		}
		r, err := setup.NewRulesResolver(rules.Config{Servers: map[string]rules.Server{
			"proc": {Rules: []rules.Rule{{Name: "hello", Tools: []string{"hello"}, Annotations: p}}},
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rec := &recorder{}
	logger := slog.New(rec)
	g, url := startGateway(t, &gateway.Options{Logger: logger, Upstreams: []gateway.UpstreamSpec{proc}, Resolver: resolver(true)})
	cs := connect(t, url, modern, nil, nil)
	call := func() (pid, record string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("hello: %v %v", res, err)
		}
		return contentText(t, res), lastCall(rec, "hello")
	}
	pid1, r := call()
	if !strings.Contains(r, "source=rules readOnly=true destructive=false") {
		t.Errorf("before the reload: %s", r)
	}
	reload(t, g, &gateway.Options{Logger: logger, Upstreams: []gateway.UpstreamSpec{proc}, Resolver: resolver(false)})
	pid2, r := call()
	if !strings.Contains(r, "source=rules readOnly=false destructive=true") {
		t.Errorf("after the reload: %s", r)
	}
	if pid1 != pid2 {
		t.Errorf("a rules change restarted the upstream: pid %s, then %s", pid1, pid2)
	}
}

// TestReloadRefused: options that cannot be applied change nothing, and a
// gateway not started cannot be reloaded; options that need a restart are
// logged as such.
func TestReloadRefused(t *testing.T) {
	t.Parallel()
	proc := childSpec(t, "proc", "")
	rec := &recorder{}
	opts := &gateway.Options{Logger: slog.New(rec), Upstreams: []gateway.UpstreamSpec{proc}}
	idle, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Reload(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "before Start") {
		t.Errorf("reload before Start: %v", err)
	}
	idle.Close()

	g, _ := startGateway(t, opts)
	other := childSpec(t, "other", "")
	for _, bad := range []*gateway.Options{
		nil,
		{Logger: opts.Logger},
		{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{proc, other, proc}},
		{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{proc, {Name: "nothing"}}},
		{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{proc, {Name: "bad", URL: "http://127.0.0.1:1/mcp", Prefix: "bad prefix"}}},
	} {
		if err := g.Reload(context.Background(), bad); err == nil {
			t.Errorf("reload with %+v: no error", bad)
		}
	}
	h := g.Health()
	if len(h.Upstreams) != 1 || h.Upstreams[0].Name != "proc" || h.Upstreams[0].Restarts != 0 || h.Tools != 2 {
		t.Errorf("after refused reloads: %+v", h)
	}
	reload(t, g, &gateway.Options{Logger: opts.Logger, Name: "renamed", Upstreams: []gateway.UpstreamSpec{proc}})
	if !rec.find("option not reloaded: it takes effect at start; restart the gateway to apply it option=name") {
		t.Error("a changed name is not logged as needing a restart")
	}
}

// TestReloadDisclosure moves progressive disclosure from one upstream to
// the other: calls are gated by the new set at once, clients are told the
// list changed, and neither upstream is restarted.
func TestReloadDisclosure(t *testing.T) {
	t.Parallel()
	a, b := childSpec(t, "a", ""), childSpec(t, "b", "")
	opts := &gateway.Options{Upstreams: []gateway.UpstreamSpec{a, b}, Disclosure: &gateway.Disclosure{Servers: []string{"a"}}}
	g, url := startGateway(t, opts)
	changes := make(chan struct{}, 100)
	cs := connect(t, url, legacy, nil, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes <- struct{}{} }})
	call := func(name string) (pid string, gated bool) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			return "", strings.Contains(err.Error(), "TOOL_DESCRIPTION_REQUIRED")
		}
		if res.IsError {
			return "", strings.Contains(contentText(t, res), "TOOL_DESCRIPTION_REQUIRED") || strings.Contains(contentText(t, res), "tool_descriptions")
		}
		return contentText(t, res), false
	}
	if _, gated := call("a__hello"); !gated {
		t.Error("a's tool is not gated before the reload")
	}
	pidB, gated := call("b__hello")
	if gated || pidB == "" {
		t.Fatal("b's tool is gated before the reload")
	}
	drainSignals(changes)
	before := g.Health().Upstreams
	reload(t, g, &gateway.Options{Logger: opts.Logger, Upstreams: []gateway.UpstreamSpec{a, b}, Disclosure: &gateway.Disclosure{Servers: []string{"b"}}})
	within(t, changes, "tools/list_changed after the disclosed servers changed")
	if _, gated := call("b__hello"); !gated {
		t.Error("b's tool is not gated after the reload")
	}
	if pid, gated := call("a__hello"); gated || pid == "" {
		t.Error("a's tool is still gated after the reload")
	}
	// The same connections: up since the same moment.
	for i, h := range g.Health().Upstreams {
		if h.State != before[i].State || !h.Since.Equal(before[i].Since) {
			t.Errorf("upstream %s was reconnected: %+v, then %+v", h.Name, before[i], h)
		}
	}
}
