package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

// ledgerEnv makes the test binary (see runChildServer) run the ledger
// server over stdio; its value is the path of a Unix socket where a call
// that finds the file "block-once" in its directory reports its process id
// before it blocks (the test kills it there: mid-call, after the request
// reached the upstream and before its effect).
const ledgerEnv = "PREFLIGHT_GATEWAY_TEST_LEDGER"

type ledgerArgs struct {
	Action string `json:"action" jsonschema:"set (idempotent) or add (not idempotent)"`
	Key    string `json:"key"`
	Value  int    `json:"value"`
}

// newLedger is a server whose calls leave their mark in dir: calls.log
// gets a line for every call received, effects.log one for every call
// that took effect. "ledger" is resolvable (set is idempotent, add is
// not); "static_set" is not, and declares idempotentHint: true statically.
// block, if not nil, is called by a call that should block (it does not
// return while the call is to stay blocked).
func newLedger(dir string, block func(ctx context.Context)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "1"}, nil)
	rs := resolve.NewServer(s, nil)
	handle := func(ctx context.Context, req *mcp.CallToolRequest, a ledgerArgs) (*mcp.CallToolResult, any, error) {
		appendLine(filepath.Join(dir, "calls.log"), fmt.Sprintf("%s %s %s %d", req.Params.Name, a.Action, a.Key, os.Getpid()))
		if block != nil {
			if err := os.Remove(filepath.Join(dir, "block-once")); err == nil {
				block(ctx)
				if ctx.Err() != nil {
					return nil, nil, ctx.Err() // abandoned: no effect
				}
			}
		}
		appendLine(filepath.Join(dir, "effects.log"), fmt.Sprintf("%s %s %s=%d", req.Params.Name, a.Action, a.Key, a.Value))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + strconv.Itoa(os.Getpid())}}}, nil, nil
	}
	resolve.AddTool(rs, &mcp.Tool{Name: "ledger", Description: "Set or add to a key"}, handle, &resolve.Table{
		Argument: "action",
		Rows: map[string]resolve.Resolution{
			"set": {Annotations: preflight.Annotations{IdempotentHint: true}, Hints: hints.Hints{Effect: hints.EffectWrite}},
			"add": {Hints: hints.Hints{Effect: hints.EffectWrite}},
		},
	})
	f := false
	mcp.AddTool(s, &mcp.Tool{Name: "static_set", Description: "Set a key",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &f}}, handle)
	return s
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}

// runLedgerServer serves the ledger over stdio in the working directory.
func runLedgerServer() int {
	sock := os.Getenv(ledgerEnv)
	s := newLedger(".", func(ctx context.Context) {
		if c, err := net.Dial("unix", sock); err == nil {
			fmt.Fprintf(c, "%d\n", os.Getpid())
			c.Close()
		}
		<-ctx.Done() // killed before that
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// ledgerRig is a gateway in front of the ledger over stdio, with a
// killer: arm() makes the next call block, and the killer kills the
// process it reports.
type ledgerRig struct {
	g      *gateway.Gateway
	url    string
	dir    string
	killed chan int
	kills  int // processes killed so far
}

func newLedgerRig(t *testing.T, retry *forward.RetryPolicy) *ledgerRig {
	t.Helper()
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "ledger")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := &ledgerRig{dir: dir, killed: make(chan int, 10)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			r.killed <- pid
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := gateway.UpstreamSpec{
		Name: "led", Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{childEnv: "1", ledgerEnv: sock}, Dir: dir,
		Restart: upstream.Restart{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Budget: 1000},
	}
	r.g, r.url = startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{spec}, Retry: retry})
	return r
}

// waitKilled waits for the killer to kill a process, and returns its id.
func (r *ledgerRig) waitKilled(t *testing.T) int {
	t.Helper()
	select {
	case pid := <-r.killed:
		r.kills++
		return pid
	case <-time.After(readyTimeout):
		t.Fatal("no call blocked in the ledger to be killed")
		return 0
	}
}

// waitBack waits until the ledger is up again after the kills so far, and
// its tools are listed.
func (r *ledgerRig) waitBack(t *testing.T) {
	t.Helper()
	waitFor(t, r.g, "the ledger back", func() bool {
		h := r.g.Health().Upstreams[0]
		_, listed := r.g.View().Tool("ledger")
		return h.State == upstream.StateUp && h.Restarts >= r.kills && listed
	})
}

func (r *ledgerRig) arm(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "block-once"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// unknownOutcome checks that resp is the retry stage's error for a call
// whose outcome is unknown and that was not retried for reason.
func unknownOutcome(t *testing.T, resp *wiretest.Response, reason string) {
	t.Helper()
	if resp.Error == nil {
		t.Fatalf("want an error, got %s", resp.Raw)
	}
	var data struct {
		Outcome  string `json:"outcome"`
		Retried  bool   `json:"retried"`
		Attempts int    `json:"attempts"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(resp.Error.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", resp.Error.Data, err)
	}
	if resp.Error.Code != -32603 || data.Outcome != "unknown" || data.Reason != reason ||
		!strings.Contains(resp.Error.Message, "the outcome is unknown") {
		t.Errorf("error: %s", resp.Raw)
	}
	if reason != forward.RetryAttempts && data.Retried != (reason == forward.RetryBudget && data.Attempts > 1) {
		t.Errorf("retried %v after %d attempts: %s", data.Retried, data.Attempts, resp.Raw)
	}
}

func callArgs(name, action, key string, value int) map[string]any {
	return map[string]any{"name": name, "arguments": map[string]any{"action": action, "key": key, "value": value}}
}

// TestRetryStdio kills a stdio upstream in the middle of calls (after it
// received them, before their effect), in both eras:
//   - a call that is idempotent by its resolution (ledger set) is retried
//     once the upstream has restarted, and succeeds with exactly one
//     effect;
//   - a call that is not (ledger add) is not retried: the client is told
//     the outcome is unknown and why, and the upstream, restarted, never
//     sees the call again;
//   - a tool whose idempotentHint is only static (static_set) is not
//     trusted: not retried either.
//
// Then /metrics, scraped over HTTP and parsed, counts these calls,
// retries, refusals and the upstream's restarts.
func TestRetryStdio(t *testing.T) {
	t.Parallel()
	r := newLedgerRig(t, nil)
	peers := map[string]*wiretest.Peer{modern: wiretest.Stateless(r.url, nil), legacy: wiretest.Legacy(r.url, nil)}
	defer peers[legacy].Close()
	calls, effects := filepath.Join(r.dir, "calls.log"), filepath.Join(r.dir, "effects.log")
	n := 0
	for _, era := range []string{modern, legacy} {
		p := peers[era]
		t.Run(era, func(t *testing.T) {
			// Idempotent by resolution: retried, one effect.
			r.arm(t)
			before := len(readLines(t, effects))
			resp := p.Call(t, "tools/call", callArgs("ledger", "set", "a"+era, 1))
			n++
			if resp.Error != nil || resp.Result["isError"] == true {
				t.Fatalf("set: %s", resp.Raw)
			}
			killed := r.waitKilled(t)
			r.waitBack(t)
			got := readLines(t, effects)
			if len(got) != before+1 || !strings.Contains(got[len(got)-1], "set_a"+era+"=1") {
				t.Errorf("effects after a retried set: %v", got)
			}
			if txt := wiretest.MustJSON(resp.Result["content"]); strings.Contains(txt, strconv.Itoa(killed)) {
				t.Errorf("the answer came from the killed process %d: %s", killed, txt)
			}

			// Not idempotent: not retried, outcome unknown.
			for _, c := range []struct{ tool, action, reason string }{
				{"ledger", "add", forward.RetryNotIdempotent},
				{"static_set", "set", forward.RetryNotResolved},
			} {
				r.arm(t)
				before := len(readLines(t, calls))
				effectsBefore := len(readLines(t, effects))
				resp := p.Call(t, "tools/call", callArgs(c.tool, c.action, "b"+era, 1))
				n++
				r.waitKilled(t)
				unknownOutcome(t, resp, c.reason)
				if c.reason == forward.RetryNotIdempotent && !strings.Contains(resp.Error.Message, "not idempotent (effect: write)") {
					t.Errorf("message: %s", resp.Error.Message)
				}
				// The upstream comes back; the call was not sent again.
				r.waitBack(t)
				if got := readLines(t, calls); len(got) != before+1 {
					t.Errorf("%s %s: calls received %v, want one more than %d", c.tool, c.action, got, before)
				}
				if got := readLines(t, effects); len(got) != effectsBefore {
					t.Errorf("%s %s: effects %v", c.tool, c.action, got)
				}
			}
		})
	}

	// The metrics count what happened.
	r.waitBack(t)
	families := scrape(t, r.url)
	sum := func(name string, labels map[string]string) float64 {
		t.Helper()
		total := 0.0
		for _, m := range families[name].GetMetric() {
			if matches(m, labels) {
				total += value(m)
			}
		}
		return total
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"preflight_calls_total", map[string]string{"server": "led", "tool": "ledger", "effect": "write", "outcome": "ok", "decision": "none"}, 2},
		{"preflight_calls_total", map[string]string{"server": "led", "tool": "ledger", "outcome": "unknown"}, 2},
		{"preflight_calls_total", map[string]string{"server": "led", "tool": "static_set", "outcome": "unknown"}, 2},
		{"preflight_retries_total", map[string]string{"server": "led", "failure": "exited"}, 2},
		{"preflight_retries_refused_total", map[string]string{"server": "led", "reason": "not_idempotent"}, 2},
		{"preflight_retries_refused_total", map[string]string{"server": "led", "reason": "not_resolved"}, 2},
		{"preflight_call_duration_seconds", map[string]string{"server": "led", "method": "tools/call"}, float64(n)},
		{"preflight_upstream_up", map[string]string{"server": "led"}, 1},
		{"preflight_upstream_restarts_total", map[string]string{"server": "led"}, 6},
	}
	for _, c := range checks {
		if got := sum(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// scrape gets the gateway's /metrics (next to its MCP endpoint) and parses
// it with the Prometheus text parser.
func scrape(t *testing.T, mcpURL string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(mcpURL, gateway.MCPPath) + gateway.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

func matches(m *dto.Metric, labels map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// value is a counter's or gauge's value, or a histogram's count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// TestRetryBudget: with a budget of one retry (and no refill within the
// test), the first idempotent call killed mid-call is retried, and the
// second is not: the budget is spent, the client is told so.
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	r := newLedgerRig(t, &forward.RetryPolicy{Budget: 1, Refill: time.Hour})
	p := wiretest.Stateless(r.url, nil)
	r.arm(t)
	if resp := p.Call(t, "tools/call", callArgs("ledger", "set", "k", 1)); resp.Error != nil {
		t.Fatalf("first set: %s", resp.Raw)
	}
	r.waitKilled(t)
	r.waitBack(t)
	r.arm(t)
	resp := p.Call(t, "tools/call", callArgs("ledger", "set", "k", 2))
	r.waitKilled(t)
	unknownOutcome(t, resp, forward.RetryBudget)
	if !strings.Contains(resp.Error.Message, "retry budget") {
		t.Errorf("message: %s", resp.Error.Message)
	}
	if got := readLines(t, filepath.Join(r.dir, "effects.log")); len(got) != 1 {
		t.Errorf("effects: %v", got)
	}
}

// failing answers HTTP 503, without passing them on, the next tools/call
// requests while armed is positive.
// With cut set, it answers the next one with the start of an event
// stream (a log message) that ends before the response.
type failing struct {
	next  http.Handler
	armed atomic.Int32
	seen  atomic.Int32 // tools/call requests refused
	cut   atomic.Bool
}

func (f *failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if strings.Contains(string(body), `"tools/call"`) && f.cut.CompareAndSwap(true, false) {
		f.seen.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		return
	}
	if strings.Contains(string(body), `"tools/call"`) && f.armed.Add(-1) >= 0 {
		f.seen.Add(1)
		http.Error(w, "upstream overloaded", http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestRetryHTTP5xx: an HTTP upstream that answers 503 to a tools/call is
// retried for a call idempotent by its resolution (one effect), and not
// for one that is not (outcome unknown, no effect), in both eras (a
// 2026-07-28 client's call takes the passthrough path).
func TestRetryHTTP5xx(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := &failing{next: endpoint.NewHandler(newLedger(dir, nil), nil)}
	f.armed.Store(-1 << 20)
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "led", URL: serveHTTP(t, f)}}})
	effects := filepath.Join(dir, "effects.log")
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			p := wiretest.Stateless(url, nil)
			if era == legacy {
				p = wiretest.Legacy(url, nil)
				defer p.Close()
			}
			before := len(readLines(t, effects))
			f.armed.Store(1)
			f.seen.Store(0)
			resp := p.Call(t, "tools/call", callArgs("ledger", "set", "h", 1))
			if resp.Error != nil || resp.Result["isError"] == true {
				t.Fatalf("set after a 503: %s", resp.Raw)
			}
			if f.seen.Load() != 1 || len(readLines(t, effects)) != before+1 {
				t.Errorf("503s %d, effects %v", f.seen.Load(), readLines(t, effects))
			}

			f.armed.Store(1)
			f.seen.Store(0)
			resp = p.Call(t, "tools/call", callArgs("ledger", "add", "h", 1))
			unknownOutcome(t, resp, forward.RetryNotIdempotent)
			if !strings.Contains(resp.Error.Message, "HTTP 503") {
				t.Errorf("message: %s", resp.Error.Message)
			}
			if f.seen.Load() != 1 || len(readLines(t, effects)) != before+1 {
				t.Errorf("503s %d, effects %v", f.seen.Load(), readLines(t, effects))
			}
		})
	}
}

// TestMetricsCardinality: 10,000 calls of distinct tool names the catalog
// does not have add one series, under tool="unknown".
func TestMetricsCardinality(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: filesServer(t)}}})
	const n = 10000
	var wg sync.WaitGroup
	for w := range 4 {
		p := wiretest.Stateless(url, nil)
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				resp := p.Call(t, "tools/call", map[string]any{"name": fmt.Sprintf("no_such_tool_%d", i), "arguments": map[string]any{}})
				if resp.Error == nil || resp.Error.Code != -32602 {
					t.Errorf("unknown tool: %s", resp.Raw)
					return
				}
			}
		})
	}
	wg.Wait()
	families := scrape(t, url)
	series := families["preflight_calls_total"].GetMetric()
	if len(series) != 1 || !matches(series[0], map[string]string{"tool": "unknown", "server": "unknown", "outcome": "error"}) || value(series[0]) != n {
		t.Errorf("calls_total after %d unknown tools: %d series: %v", n, len(series), series)
	}
	total := 0
	for _, f := range families {
		total += len(f.GetMetric())
	}
	if total > 500 {
		t.Errorf("%d series in all", total)
	}
}

// TestMetricsOff: with metrics off, /metrics is not served.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: filesServer(t)}},
		Metrics: &gateway.MetricsOptions{Off: true}})
	resp, err := http.Get(strings.TrimSuffix(url, gateway.MCPPath) + gateway.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics with metrics off: %d", resp.StatusCode)
	}
}

// TestPassthroughCut: a 2026-07-28 client's call on the passthrough path
// whose upstream answer ends after its first event (a log message, relayed
// to the client at once) and before the response. The result is never
// streamed half (forwarders return it whole), so what decides a retry is
// the call alone: an idempotent one is sent again and the client gets the
// log message, then the retry's result; one that is not gets the log
// message, then an error saying the outcome is unknown and the call was
// not retried.
func TestPassthroughCut(t *testing.T) {
	t.Parallel()
	f := &failing{next: endpoint.NewHandler(newLedger(t.TempDir(), nil), nil)}
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "led", URL: serveHTTP(t, f)}}})
	p := wiretest.Stateless(url, nil)
	logged := func(r *wiretest.Response) bool {
		return len(r.Before) == 1 && strings.Contains(string(r.Before[0]), `"data":"working"`)
	}

	f.cut.Store(true)
	resp := p.Call(t, "tools/call", callArgs("ledger", "set", "c", 1))
	if resp.Error != nil || !strings.Contains(string(resp.Raw), "done") || !logged(resp) {
		t.Errorf("cut answer of an idempotent call: %s, before it %q", resp.Raw, resp.Before)
	}
	if f.seen.Load() != 1 {
		t.Errorf("the upstream cut %d requests", f.seen.Load())
	}

	f.cut.Store(true)
	resp = p.Call(t, "tools/call", callArgs("ledger", "add", "d", 1))
	if resp.Error == nil || !strings.Contains(resp.Error.Message, "the outcome is unknown") ||
		!strings.Contains(string(resp.Error.Data), `"outcome":"unknown"`) || !strings.Contains(string(resp.Error.Data), `"retried":false`) || !logged(resp) {
		t.Errorf("cut answer of a call that is not idempotent: %s, before it %q", resp.Raw, resp.Before)
	}
	if f.seen.Load() != 2 {
		t.Errorf("the upstream cut %d requests, want 2 (the second call not retried)", f.seen.Load())
	}
}

// TestRetryTimeout: an HTTP upstream that does not answer within the call
// timeout (a timeout before any response) is retried for a call that is
// idempotent by its resolution, which then takes effect once, and not for
// one that is not (outcome unknown).
func TestRetryTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A blocked call waits for its context (which the upstream's server
	// may not cancel when the gateway gives up) or the end of the test.
	release := make(chan struct{})
	up := serveHTTP(t, endpoint.NewHandler(newLedger(dir, func(ctx context.Context) {
		select {
		case <-ctx.Done():
		case <-release:
		}
	}), nil))
	t.Cleanup(func() { close(release) })
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "led", URL: up, CallTimeout: 500 * time.Millisecond}}})
	p := wiretest.Legacy(url, nil)
	defer p.Close()
	arm := func() {
		if err := os.WriteFile(filepath.Join(dir, "block-once"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	effects := filepath.Join(dir, "effects.log")
	arm()
	if resp := p.Call(t, "tools/call", callArgs("ledger", "set", "t", 1)); resp.Error != nil || resp.Result["isError"] == true {
		t.Fatalf("set after a timeout: %s", resp.Raw)
	}
	if got := readLines(t, effects); len(got) != 1 {
		t.Errorf("effects: %v", got)
	}
	arm()
	resp := p.Call(t, "tools/call", callArgs("ledger", "add", "t", 1))
	unknownOutcome(t, resp, forward.RetryNotIdempotent)
	if !strings.Contains(resp.Error.Message, "did not answer in time") {
		t.Errorf("message: %s", resp.Error.Message)
	}
	if got := readLines(t, filepath.Join(dir, "calls.log")); len(got) != 3 {
		t.Errorf("calls received: %v", got)
	}
}
