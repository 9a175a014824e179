package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// noopServer has one tool that does nothing, so that a call measures the
// protocol and the path, not the tool.
func noopServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "noop", Version: "1"}, nil)
	f := false
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return s
}

// BenchmarkGatewayCall measures what the gateway adds to a tools/call: the
// same no-op call made directly to the upstream and through the gateway,
// interleaved in one run (phases alternate between the two, so both see
// the same machine at the same moment), with 1 and 8 concurrent clients,
// in each protocol era (client and upstream in the same era), with the
// gateway's resolution on (every call goes through the resolve stage).
//
// Metrics: the median and 90th percentile latency of each path, the
// median the gateway adds, and the gateway's throughput as a fraction of
// the direct one. See docs/benchmarks.md for the command and figures.
func BenchmarkGatewayCall(b *testing.B) {
	for _, era := range []string{modern, legacy} {
		b.Run("era="+era, func(b *testing.B) {
			up := serveHTTP(b, endpoint.NewHandler(noopServer(), nil))
			_, gw := startGateway(b, &gateway.Options{
				Logger:    nil,
				Upstreams: []gateway.UpstreamSpec{{Name: "noop", URL: up, Era: era, CallTimeout: time.Minute}},
			})
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					benchPaths(b, era, clients, up, gw, [2]string{"direct", "gateway"}, noopCall)
				})
			}
			// The same with decisions on: the decide, ask and confirmed
			// stages, with rules of which two are evaluated on every
			// call. The call is an allowed read, so nothing is asked.
			_, gwd := startGateway(b, &gateway.Options{
				Decisions: benchDecisions(),
				Upstreams: []gateway.UpstreamSpec{{Name: "noop", URL: up, Era: era, CallTimeout: time.Minute}},
			})
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("decisions/clients=%d", clients), func(b *testing.B) {
					benchPaths(b, era, clients, up, gwd, [2]string{"direct", "gateway"}, noopCall)
				})
			}
		})
	}
}

// benchDecisions are decision rules of a realistic size: most apply to
// other servers, two are evaluated on every call.
func benchDecisions() *stage.DecideOptions {
	d := &stage.DecideOptions{}
	for i := range 18 {
		d.Rules = append(d.Rules, stage.DecisionRule{Name: fmt.Sprintf("github-%d", i), Servers: []string{"github"},
			Tools: []string{fmt.Sprintf("tool_%d*", i)}, When: `args.force == true`, Verdict: call.Deny})
	}
	d.Rules = append(d.Rules,
		stage.DecisionRule{Name: "blocked", When: `principal == "blocked"`, Verdict: call.Deny},
		stage.DecisionRule{Name: "deletes", When: `effect == "delete" && server != "scratch"`, Verdict: call.Confirm, OutOfBand: true})
	return d
}

// BenchmarkGatewayCallPinned measures what pinning adds to a tools/call:
// the same no-op call through two gateways in front of one upstream, one
// without pins and one pinning in SQLite (strict mode), interleaved as in
// BenchmarkGatewayCall. The pin stage answers each call from memory (and
// reads the store at most once per pin.DefaultRefresh per tool).
//
// Metrics: as BenchmarkGatewayCall's, the paths named unpinned and pinned;
// added-p50-µs is what the pin check adds.
func BenchmarkGatewayCallPinned(b *testing.B) {
	for _, era := range []string{modern, legacy} {
		b.Run("era="+era, func(b *testing.B) {
			up := serveHTTP(b, endpoint.NewHandler(noopServer(), nil))
			spec := gateway.UpstreamSpec{Name: "noop", URL: up, Era: era, CallTimeout: time.Minute}
			_, plain := startGateway(b, &gateway.Options{Upstreams: []gateway.UpstreamSpec{spec}})
			store, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "pins.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close() })
			_, pinned := startGateway(b, &gateway.Options{Upstreams: []gateway.UpstreamSpec{spec}, Pinner: pin.New(store, nil)})
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					benchPaths(b, era, clients, plain, pinned, [2]string{"unpinned", "pinned"}, noopCall)
				})
			}
		})
	}
}

// noopCall makes the call the benchmarks make unless they say otherwise:
// a params value per call, since the SDK's client writes the request's
// _meta into the params it is given.
func noopCall() *mcp.CallToolParams { return benchCall("noop") }

// benchCall returns a fresh call of tool.
func benchCall(tool string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"n": 1}}
}

// benchPaths runs b.N calls (params) on each path with clients concurrent
// sessions per path; names name the two paths in the metrics.
func benchPaths(b *testing.B, era string, clients int, direct, gw string, names [2]string, params func() *mcp.CallToolParams) {
	sessions := func(url string) []*mcp.ClientSession {
		var out []*mcp.ClientSession
		for range clients {
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cs.Close() })
			out = append(out, cs)
		}
		return out
	}
	paths := [2][]*mcp.ClientSession{sessions(direct), sessions(gw)}
	var lat [2][]time.Duration
	var wall [2]time.Duration
	var mu sync.Mutex

	// Warm both paths (connections, caches) before measuring.
	for _, ss := range paths {
		for _, cs := range ss {
			if _, err := cs.CallTool(context.Background(), params()); err != nil {
				b.Fatal(err)
			}
		}
	}

	phase := max(b.N/10, clients)
	b.ResetTimer()
	for done := 0; done < b.N; done += phase {
		n := min(phase, b.N-done)
		for p := range 2 {
			// Alternate which path goes first.
			p := (p + done/phase) % 2
			start := time.Now()
			var wg sync.WaitGroup
			for w := range clients {
				calls := n / clients
				if w < n%clients {
					calls++
				}
				cs := paths[p][w]
				wg.Go(func() {
					local := make([]time.Duration, 0, calls)
					for range calls {
						t0 := time.Now()
						if _, err := cs.CallTool(context.Background(), params()); err != nil {
							b.Error(err)
							return
						}
						local = append(local, time.Since(t0))
					}
					mu.Lock()
					lat[p] = append(lat[p], local...)
					mu.Unlock()
				})
			}
			wg.Wait()
			wall[p] += time.Since(start)
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, f float64) float64 {
		slices.Sort(d)
		return float64(d[int(f*float64(len(d)-1))].Microseconds())
	}
	d50, g50 := q(lat[0], 0.5), q(lat[1], 0.5)
	b.ReportMetric(d50, names[0]+"-p50-µs")
	b.ReportMetric(g50, names[1]+"-p50-µs")
	b.ReportMetric(q(lat[0], 0.9), names[0]+"-p90-µs")
	b.ReportMetric(q(lat[1], 0.9), names[1]+"-p90-µs")
	b.ReportMetric(g50-d50, "added-p50-µs")
	b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "throughput-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGatewayMetrics measures what the metrics stage costs: the
// same no-op call through two gateways in front of one upstream, one with
// metrics off and one with them on (the default), interleaved as in
// BenchmarkGatewayCall. added-p50-µs is the median the metrics add. See
// docs/metrics.md for the command and figures.
func BenchmarkGatewayMetrics(b *testing.B) {
	for _, era := range []string{modern, legacy} {
		b.Run("era="+era, func(b *testing.B) {
			up := serveHTTP(b, endpoint.NewHandler(noopServer(), nil))
			spec := []gateway.UpstreamSpec{{Name: "noop", URL: up, Era: era, CallTimeout: time.Minute}}
			_, off := startGateway(b, &gateway.Options{Upstreams: spec, Metrics: &gateway.MetricsOptions{Off: true}})
			_, on := startGateway(b, &gateway.Options{Upstreams: spec})
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					benchPaths(b, era, clients, off, on, [2]string{"off", "on"}, noopCall)
				})
			}
		})
	}
}

var _ = upstream.EraModern

// layersServer has a read whose result is a 4 KiB GitHub issue holding an
// e-mail address, a token and a phone number, declared confidential (so
// that redaction scans and redacts it), and a destructive tool that does
// nothing (so that the audit log writes it durably before and after).
func layersServer(b *testing.B) *mcp.Server {
	issue, err := os.ReadFile(filepath.Join("internal", "redact", "testdata", "issue.json"))
	if err != nil {
		b.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "layers", Version: "1"}, nil)
	f, tr := false, true
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	s.AddTool(&mcp.Tool{Name: "issue", InputSchema: schema, Meta: mcp.Meta{"mcp.dev/resultSensitivity": "confidential"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(issue)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "erase", InputSchema: schema, Annotations: &mcp.ToolAnnotations{DestructiveHint: &tr, OpenWorldHint: &f}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return s
}

// BenchmarkGatewayLayers measures what the audit log (SQLite) and
// redaction cost a call, as BenchmarkGatewayCall measures the gateway:
// the gateway with neither, with each, and with both, each against the
// direct call. "issue" is a confidential 4 KiB read (redacted; audited
// after it ends, in batches); "erase" a destructive call (audited durably
// before it is forwarded and after). "all" adds decisions (a rule set of
// realistic size), pins in SQLite, the audit log and redaction. Metrics and
// retries are on in every configuration, as by default. A layer's cost is
// the difference of added-p50-µs between a configuration with it and one
// without.
func BenchmarkGatewayLayers(b *testing.B) {
	for _, era := range []string{modern, legacy} {
		b.Run("era="+era, func(b *testing.B) {
			up := serveHTTP(b, endpoint.NewHandler(layersServer(b), nil))
			for _, layers := range []string{"none", "audit", "redact", "audit+redact", "all"} {
				b.Run("layers="+layers, func(b *testing.B) {
					opts := &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "layers", URL: up, Era: era, CallTimeout: time.Minute}}}
					if layers == "all" {
						// Every layer: decisions with a rule set of realistic
						// size (and a rule that lets the benchmark's
						// destructive call run without a person), pins in
						// SQLite, the audit log and redaction; metrics and
						// retries are on in every configuration.
						d := benchDecisions()
						d.Rules = append([]stage.DecisionRule{{Name: "erase-runs", Tools: []string{"erase"}, Verdict: call.Allow}}, d.Rules...)
						opts.Decisions = d
						store, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "pins.db"))
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(func() { store.Close() })
						opts.Pinner = pin.New(store, nil)
						layers = "audit+redact"
					}
					if strings.Contains(layers, "audit") {
						a, s, err := setup.OpenAudit(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "audit.db"), nil)
						if err != nil {
							b.Fatal(err)
						}
						opts.Auditor, opts.AuditStore = a, s
					}
					if strings.Contains(layers, "redact") {
						r, err := redact.New(nil)
						if err != nil {
							b.Fatal(err)
						}
						opts.Redactor = r
					}
					_, gw := startGateway(b, opts)
					for _, tool := range []string{"issue", "erase"} {
						b.Run("tool="+tool, func(b *testing.B) {
							benchPaths(b, era, 1, up, gw, [2]string{"direct", "gateway"}, func() *mcp.CallToolParams { return benchCall(tool) })
						})
					}
				})
			}
		})
	}
}

// BenchmarkGatewayTracing measures what tracing costs a tools/call: the
// same no-op call through a gateway without a tracer provider and through
// one whose provider samples every call and batches its spans to an
// exporter that drops them (the export itself runs beside the call), in
// each era. The difference of ns/op and allocs/op between tracing=off and
// tracing=on is the cost of the call's spans: one for the call, one per
// stage, one for the round trip, and the trace context in _meta.
func BenchmarkGatewayTracing(b *testing.B) {
	for _, era := range []string{modern, legacy} {
		b.Run("era="+era, func(b *testing.B) {
			up := serveHTTP(b, endpoint.NewHandler(noopServer(), nil))
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { tp.Shutdown(context.Background()) })
			for _, tracing := range []string{"off", "on"} {
				opts := &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "noop", URL: up, Era: era, CallTimeout: time.Minute}}}
				if tracing == "on" {
					opts.TracerProvider = tp
				}
				_, gw := startGateway(b, opts)
				b.Run("tracing="+tracing, func(b *testing.B) {
					c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
					cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: gw, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
					if err != nil {
						b.Fatal(err)
					}
					defer cs.Close()
					b.ReportAllocs()
					for b.Loop() {
						if _, err := cs.CallTool(context.Background(), noopCall()); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
