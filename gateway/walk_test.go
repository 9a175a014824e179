package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/resolve"
)

// TestChainOrderAsBuilt checks the stages each method's calls cross, as
// the gateway builds its chain: with every feature on (from a
// configuration with every section: audit log and pins in SQLite files,
// approvals, disclosure, and decisions, redaction and metrics, which are
// on by default), and with every feature off.
func TestChainOrderAsBuilt(t *testing.T) {
	dir := t.TempDir()
	yaml := fmt.Sprintf(`servers:
  a:
    url: http://127.0.0.1:1/mcp
    pin: strict
    disclose: true
disclosure: {enabled: true}
pins: {path: %q}
audit: {path: %q}
approvals: {store: memory}
metrics: {enabled: true}
`, filepath.Join(dir, "pins.db"), filepath.Join(dir, "audit.db"))
	cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every feature the chain has a stage for is on.
	for what, on := range map[string]bool{
		"Auditor":    opts.Auditor != nil,
		"Pinner":     opts.Pinner != nil,
		"Decisions":  opts.Decisions != nil,
		"Flow":       opts.Flow != nil,
		"Approvals":  opts.Approvals != nil,
		"Redactor":   opts.Redactor != nil,
		"Disclosure": opts.Disclosure != nil,
		"Metrics":    opts.Metrics == nil || !opts.Metrics.Off,
	} {
		if !on {
			opts.Close()
			t.Fatalf("the configuration left %s off", what)
		}
	}
	g, err := gateway.New(opts)
	if err != nil {
		opts.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	outer := []string{"log", "metrics", "route", "hold"}
	read := []string{"log", "metrics", "route", "hold", "flow", "redact"}
	all := map[string][]string{
		call.ToolsCall:     {"log", "metrics", "route", "hold", "audit.refused", "disclose", "pin", "resolve", "flow", "decide", "ask", "approve", "confirmed", "audit", "redact"},
		call.ToolsResolve:  {"log", "metrics", "route", "hold", "pin", "resolve"},
		call.PromptsGet:    read,
		call.ResourcesRead: read,
		call.Complete:      outer,
		call.Subscribe:     outer,
		call.Unsubscribe:   outer,
		call.Answer:        outer,
	}
	checkOrder(t, "every feature on", g, all)

	bare, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "a", URL: "http://127.0.0.1:1/mcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bare.Close() })
	off := map[string][]string{
		call.ToolsCall:     {"log", "metrics", "route", "hold", "resolve"},
		call.ToolsResolve:  {"log", "metrics", "route", "hold", "resolve"},
		call.PromptsGet:    outer,
		call.ResourcesRead: outer,
		call.Complete:      outer,
		call.Subscribe:     outer,
		call.Unsubscribe:   outer,
		call.Answer:        outer,
	}
	checkOrder(t, "every feature off", bare, off)
}

// checkOrder compares g's chain with want for every method of
// call.Methods (which want must cover exactly).
func checkOrder(t *testing.T, what string, g *gateway.Gateway, want map[string][]string) {
	t.Helper()
	methods := call.Methods()
	if got := slices.Sorted(maps.Keys(want)); !slices.Equal(got, slices.Sorted(slices.Values(methods))) {
		t.Fatalf("%s: the test covers %v, call.Methods() is %v", what, got, methods)
	}
	for _, m := range methods {
		if got := gateway.ChainOrder(g, m); !slices.Equal(got, want[m]) {
			t.Errorf("%s: %s crosses\n  %s\nwant\n  %s", what, m, strings.Join(got, " "), strings.Join(want[m], " "))
		}
	}
}

// The kinds of message an upstream receives that clients' calls cause,
// as walkRecorder names them.
const (
	upCall     = "tools/call"                         // a tools/call without answers
	upResumed  = "tools/call with answers"            // a 2026-07-28 retry carrying inputResponses or requestState
	upAnswer   = "answer"                             // a JSON-RPC response to the upstream's own request
	upListen   = "subscriptions/listen"               // without resources: the gateway's list_changed stream
	upListenTo = "subscriptions/listen of resources"  // a 2026-07-28 resources/subscribe
	upUnlisten = "cancellation of a resources listen" // a 2026-07-28 resources/unsubscribe
	upCancel   = "notifications/cancelled"            // of any other request
)

// housekeeping is what the gateway sends an upstream of its own accord,
// never on behalf of a client's call: connecting (server/discover, or
// initialize and its notification, and the legacy session's
// logging/setLevel and its GET stream), listing (the catalog is built
// from the upstream's lists), keeping the session alive (ping, and the
// answer to the upstream's), the 2026-07-28 list_changed stream, and
// the end of the session (DELETE). Cancellations are notifications
// about a request sent before (the chain saw it, or it was the
// gateway's own), never a request themselves.
var housekeeping = []string{
	"server/discover", "initialize", "notifications/initialized", "logging/setLevel", "ping",
	"tools/list", "prompts/list", "resources/list", "resources/templates/list",
	upListen, upCancel, "response to a ping", "HTTP GET", "HTTP DELETE",
}

// walkRecorder wraps an upstream's HTTP handler and counts what it
// receives, by kind: the method of a request or notification (with the
// distinctions of the constants above), a response, or an HTTP request
// other than a POST.
type walkRecorder struct {
	h       http.Handler
	mu      sync.Mutex
	n       map[string]int
	listens map[string]bool // ids of the subscriptions/listen of resources
}

func (r *walkRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	kind := "HTTP " + req.Method
	if req.Method == http.MethodPost {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		r.mu.Lock()
		kind = r.kind(b)
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.n[kind]++
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func (r *walkRecorder) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// kind names the JSON-RPC message b; r.mu held.
func (r *walkRecorder) kind(b []byte) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Params struct {
			InputResponses json.RawMessage `json:"inputResponses"`
			RequestState   string          `json:"requestState"`
			RequestID      json.RawMessage `json:"requestId"`
			Notifications  struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "unreadable: " + string(b)
	}
	switch {
	case m.Method == "" && len(m.Error) > 0:
		return upAnswer
	case m.Method == "" && len(m.Result) > 0:
		if strings.TrimSpace(string(m.Result)) == "{}" {
			return "response to a ping"
		}
		return upAnswer
	case m.Method == "":
		return "unreadable: " + string(b)
	case m.Method == call.ToolsCall && (m.Params.RequestState != "" || (len(m.Params.InputResponses) > 0 && string(m.Params.InputResponses) != "null")):
		return upResumed
	case m.Method == upListen && len(m.Params.Notifications.ResourceSubscriptions) > 0:
		if r.listens == nil {
			r.listens = map[string]bool{}
		}
		r.listens[string(m.ID)] = true
		return upListenTo
	case m.Method == upCancel && r.listens[string(m.Params.RequestID)]:
		return upUnlisten
	}
	return m.Method
}

// walkLog is the gateway's JSON log, safe for concurrent writes.
type walkLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *walkLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// calls counts the log's "call" records by method, and the tools/call
// records by tool.
func (l *walkLog) calls(t *testing.T) (byMethod, byTool map[string]int) {
	t.Helper()
	l.mu.Lock()
	text := l.b.String()
	l.mu.Unlock()
	byMethod, byTool = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg    string `json:"msg"`
			Method string `json:"method"`
			Tool   string `json:"tool"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q: %v", sc.Text(), err)
		}
		if rec.Msg != "call" {
			continue
		}
		byMethod[rec.Method]++
		if rec.Method == call.ToolsCall {
			byTool[rec.Tool]++
		}
	}
	return byMethod, byTool
}

// walkServer is the upstream of the walk: a tool that answers at once
// (echo), folders' delete_folder (resolvable, and it asks the client to
// confirm before it deletes a folder with content), a prompt, a resource,
// a template, completions and subscriptions.
func walkServer(root *os.Root) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "walk", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.Type}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
		})
	foldertool.Add(s, resolve.NewServer(s, nil), inject.NewInjector(nil), root)
	s.AddPrompt(&mcp.Prompt{Name: "greeting", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://note", Name: "note", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a note"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://notes/{id}", Name: "notes"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note"}}}, nil
	})
	return s
}

// walkMethods are the methods a client sends that cross the chain (every
// one of call.Methods but answer, which the gateway makes of a client's
// answer).
var walkMethods = []string{call.ToolsCall, call.ToolsResolve, call.PromptsGet, call.ResourcesRead, call.Complete, call.Subscribe, call.Unsubscribe}

// TestEveryMethodCrossesTheChain is the method walk: for each upstream era
// and each client era, a client sends every method the gateway forwards
// (and answers a question the upstream asks within a call), and every
// request that reached the upstream must have been seen by the chain: for
// each method, the upstream received no more of it than the log has
// "call" records of it, and the metrics count what the log records. What
// the gateway sends the upstream of its own accord (housekeeping) is
// accounted for by name, and anything else fails the test.
func TestEveryMethodCrossesTheChain(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{legacy, modern} {
		t.Run("upstream "+upEra, func(t *testing.T) {
			url, rec, log := walkGateway(t, upEra)
			for _, clientEra := range []string{modern, legacy} {
				t.Run("client "+clientEra, func(t *testing.T) {
					walk(t, url, upEra, clientEra, rec, log)
				})
			}
		})
	}
}

// walkGateway serves walkServer in upEra behind a walkRecorder, and a
// gateway in front of it (metrics on, its JSON log in log), and returns
// the gateway's URL.
func walkGateway(t *testing.T, upEra string) (url string, rec *walkRecorder, log *walkLog) {
	t.Helper()
	dir := t.TempDir()
	for _, era := range []string{modern, legacy} {
		if err := os.MkdirAll(filepath.Join(dir, "full-"+era), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "full-"+era, "a.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	s := walkServer(root)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	// As serveEra: both eras on one URL for a 2026-07-28 upstream (the
	// gateway's probe picks 2026-07-28), a stateful legacy handler
	// otherwise.
	var h http.Handler
	if upEra == modern {
		h = endpoint.NewHandler(s, nil)
	} else {
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	rec = &walkRecorder{h: h, n: map[string]int{}}
	log = &walkLog{}
	g, url := startGateway(t, &gateway.Options{
		Logger:    slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Upstreams: []gateway.UpstreamSpec{{Name: "walk", URL: serveHTTP(t, rec)}},
	})
	if era := g.Health().Upstreams[0].Era; era != upEra {
		t.Fatalf("the upstream connected at %s, want %s", era, upEra)
	}
	return url, rec, log
}

// walk sends every forwarded method once from a client of clientEra and
// checks what reached the upstream against the log and the metrics.
func walk(t *testing.T, url, upEra, clientEra string, rec *walkRecorder, log *walkLog) {
	upBefore := rec.counts()
	logBefore, toolBefore := log.calls(t)
	metBefore := callsMetric(t, url)

	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	asked := &answers{}
	cs := connect(t, url, clientEra, asked, nil)

	// tools/call, plain.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || contentText(t, res) != "echo" {
		t.Fatalf("echo: %v %v", res, err)
	}
	// tools/call of a tool whose upstream asks the client mid-call: the
	// client's answer crosses the chain (as an answer within a legacy
	// client's call, in a 2026-07-28 client's retry of the call).
	folder := "full-" + clientEra
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": folder}})
	if err != nil || contentText(t, res) != "deleted: "+folder {
		t.Fatalf("delete_folder: %v %v", res, err)
	}
	if got := asked.messages(); len(got) != 1 {
		t.Errorf("questions asked: %q", got)
	}
	// tools/resolve of the resolvable tool: the upstream resolves it.
	if r, err := resolve.Resolve(ctx, cs, "delete_folder", map[string]any{"path": "full-none"}); err != nil || r.Name != "delete_folder" {
		t.Fatalf("tools/resolve: %+v %v", r, err)
	}
	if pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greeting", Arguments: map[string]string{"who": clientEra}}); err != nil || len(pr.Messages) != 1 {
		t.Fatalf("prompts/get: %v %v", pr, err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://note"}); err != nil || rr.Contents[0].Text != "a note" {
		t.Fatalf("resources/read: %v %v", rr, err)
	}
	for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "greeting"}, {Type: "ref/resource", URI: "mem://notes/{id}"}} {
		if cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}}); err != nil || len(cr.Completion.Values) != 1 {
			t.Fatalf("completion/complete %s: %v %v", ref.Type, cr, err)
		}
	}
	// A 2026-07-28 client subscribes with a subscriptions/listen stream,
	// which the SDK server turns into a subscribe and, when the stream
	// ends, an unsubscribe: both happen after the client's calls return.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	waitCalls(t, log, logBefore, call.Subscribe)
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	waitCalls(t, log, logBefore, call.Unsubscribe)
	cs.Close()

	// Let what is in flight land: the log records a call after its answer
	// is on its way to the client.
	up, logged, tools, met := settle(t, rec, log, url)
	up, logged, tools, met = diff(up, upBefore), diff(logged, logBefore), diff(tools, toolBefore), diff(met, metBefore)
	t.Logf("upstream %s, client %s:\n  upstream received %v\n  log call records   %v\n  preflight_calls_total %v\n  tools/call records by tool %v",
		upEra, clientEra, sorted(up), sorted(logged), sorted(met), sorted(tools))

	// Nothing reached the upstream that is neither a forwarded method nor
	// named housekeeping.
	forwardedKinds := []string{upCall, upResumed, call.ToolsResolve, call.PromptsGet, call.ResourcesRead, call.Complete,
		call.Subscribe, upListenTo, call.Unsubscribe, upUnlisten, upAnswer}
	for kind, n := range up {
		if !slices.Contains(forwardedKinds, kind) && !slices.Contains(housekeeping, kind) {
			t.Errorf("the upstream received %d %q, neither a forwarded method nor housekeeping", n, kind)
		}
	}

	// The metrics count every call the log records, method by method.
	for _, m := range call.Methods() {
		if logged[m] != met[m] {
			t.Errorf("%s: %d log records, preflight_calls_total %d", m, logged[m], met[m])
		}
	}
	for m := range met {
		if !slices.Contains(call.Methods(), m) {
			t.Errorf("preflight_calls_total counts method %q (%d)", m, met[m])
		}
	}

	// Every method was walked: the chain saw each, and the upstream got
	// each (the walk is not vacuous).
	for _, m := range walkMethods {
		if logged[m] == 0 {
			t.Errorf("no %s crossed the chain", m)
		}
	}
	if clientEra == legacy && logged[call.Answer] == 0 {
		t.Errorf("no answer crossed the chain")
	}
	for kind, n := range map[string]int{
		upCall:             up[upCall],
		call.ToolsResolve:  up[call.ToolsResolve],
		call.PromptsGet:    up[call.PromptsGet],
		call.ResourcesRead: up[call.ResourcesRead],
		call.Complete:      up[call.Complete],
		call.Subscribe:     up[call.Subscribe] + up[upListenTo],
		"the answer":       up[upAnswer] + up[upResumed],
	} {
		if n == 0 {
			t.Errorf("the upstream received no %s", kind)
		}
	}

	// Every request that reached the upstream was seen by the chain.
	for _, m := range []string{call.PromptsGet, call.ResourcesRead, call.Complete} {
		if up[m] > logged[m] {
			t.Errorf("the upstream received %d %s, the chain saw %d", up[m], m, logged[m])
		}
	}
	// A 2026-07-28 upstream is subscribed to with a subscriptions/listen
	// stream, and unsubscribed from by its cancellation.
	if n := up[call.Subscribe] + up[upListenTo]; n > logged[call.Subscribe] {
		t.Errorf("the upstream received %d subscriptions (resources/subscribe %d, subscriptions/listen of resources %d), the chain saw %d",
			n, up[call.Subscribe], up[upListenTo], logged[call.Subscribe])
	}
	if n := up[call.Unsubscribe] + up[upUnlisten]; n > logged[call.Unsubscribe] {
		t.Errorf("the upstream received %d unsubscriptions (resources/unsubscribe %d, cancellations of a listen %d), the chain saw %d",
			n, up[call.Unsubscribe], up[upUnlisten], logged[call.Unsubscribe])
	}
	if up[upCall] > logged[call.ToolsCall] {
		t.Errorf("the upstream received %d tools/call, the chain saw %d", up[upCall], logged[call.ToolsCall])
	}
	// The upstream resolves delete_folder for the client's tools/resolve,
	// and for each tools/call of it the resolve stage of that call asks
	// the upstream first: both are chain crossings.
	if n := logged[call.ToolsResolve] + tools["delete_folder"]; up[call.ToolsResolve] > n {
		t.Errorf("the upstream received %d tools/resolve, the chain saw %d tools/resolve and %d tools/call of the resolvable tool",
			up[call.ToolsResolve], logged[call.ToolsResolve], tools["delete_folder"])
	}
	// An answer reaches the upstream as a response to its request (a
	// legacy upstream) or in a retry of the call (a 2026-07-28 upstream).
	// A legacy client's answer crosses the chain as an answer; a
	// 2026-07-28 client's comes in its retry of the tools/call, which
	// crosses the chain as a tools/call that sent the upstream no fresh
	// call.
	delivered := up[upAnswer] + up[upResumed]
	if clientEra == legacy {
		if delivered > logged[call.Answer] {
			t.Errorf("the upstream received %d answers (%d responses, %d retries with answers), the chain saw %d answers",
				delivered, up[upAnswer], up[upResumed], logged[call.Answer])
		}
	} else if retries := logged[call.ToolsCall] - up[upCall]; delivered > retries {
		t.Errorf("the upstream received %d answers (%d responses, %d retries with answers), the chain saw %d tools/call that were not fresh calls",
			delivered, up[upAnswer], up[upResumed], retries)
	}
}

// TestLastUnsubscribeReachesTheUpstream subscribes a client of each era to
// a resource through the gateway and unsubscribes it: the gateway
// subscribed to the upstream for it, and when the last client
// unsubscribes, the gateway unsubscribes from the upstream too
// (resources/unsubscribe for a legacy upstream, the end of its
// subscriptions/listen stream for a 2026-07-28 one).
//
// A 2026-07-28 client unsubscribes by ending its subscriptions/listen
// stream; the SDK server then calls the gateway's UnsubscribeHandler with
// the stream's context, already cancelled, and the chain's final handler
// (forward's unsubscribe) sends the legacy upstream its resources/unsubscribe
// with that context: it never leaves ("upstream unsubscribe failed:
// context canceled" in the log), and the gateway stays subscribed.
func TestLastUnsubscribeReachesTheUpstream(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{legacy, modern} {
		t.Run("upstream "+upEra, func(t *testing.T) {
			url, rec, log := walkGateway(t, upEra)
			for _, clientEra := range []string{modern, legacy} {
				t.Run("client "+clientEra, func(t *testing.T) {
					upBefore := rec.counts()
					logBefore, _ := log.calls(t)
					ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
					defer cancel()
					cs := connect(t, url, clientEra, nil, nil)
					if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
						t.Fatalf("subscribe: %v", err)
					}
					waitCalls(t, log, logBefore, call.Subscribe)
					if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
						t.Fatalf("unsubscribe: %v", err)
					}
					waitCalls(t, log, logBefore, call.Unsubscribe)
					cs.Close()
					up, _, _, _ := settle(t, rec, log, url)
					up = diff(up, upBefore)
					subscribed := up[call.Subscribe] + up[upListenTo]
					unsubscribed := up[call.Unsubscribe] + up[upUnlisten]
					if subscribed != 1 || unsubscribed != subscribed {
						t.Errorf("the gateway subscribed to the upstream %d times and unsubscribed %d times (upstream received %s)",
							subscribed, unsubscribed, sorted(up))
					}
				})
			}
		})
	}
}

// waitCalls waits until the log has more "call" records of method than
// before.
func waitCalls(t *testing.T, log *walkLog, before map[string]int, method string) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		now, _ := log.calls(t)
		if now[method] > before[method] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s crossed the chain", method)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until what the upstream received, the log and the metrics
// have not changed for a while, and returns them.
func settle(t *testing.T, rec *walkRecorder, log *walkLog, url string) (up, logged, tools, met map[string]int) {
	t.Helper()
	const quiet = 150 * time.Millisecond
	deadline := time.Now().Add(readyTimeout)
	var last string
	stable := time.Now()
	for {
		up = rec.counts()
		logged, tools = log.calls(t)
		met = callsMetric(t, url)
		now := fmt.Sprint(sorted(up), sorted(logged), sorted(met))
		if now != last {
			last, stable = now, time.Now()
		} else if time.Since(stable) >= quiet {
			return up, logged, tools, met
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counts never settled: %s", now)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callsMetric sums the gateway's preflight_calls_total by method.
func callsMetric(t *testing.T, url string) map[string]int {
	t.Helper()
	out := map[string]int{}
	f := scrape(t, url)["preflight_calls_total"]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" {
				out[l.GetValue()] += int(value(m))
			}
		}
	}
	return out
}

// diff returns now minus before, without the zeros.
func diff(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// sorted renders counts in a stable order.
func sorted(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
