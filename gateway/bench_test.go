package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/upstream"
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
					benchPaths(b, era, clients, up, gw, [2]string{"direct", "gateway"})
				})
			}
		})
	}
}

// benchPaths runs b.N calls on each path with clients concurrent sessions
// per path; names label the two paths in the metrics.
func benchPaths(b *testing.B, era string, clients int, direct, gw string, names [2]string) {
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
	params := &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{"n": 1}}

	// Warm both paths (connections, caches) before measuring.
	for _, ss := range paths {
		for _, cs := range ss {
			if _, err := cs.CallTool(context.Background(), params); err != nil {
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
						if _, err := cs.CallTool(context.Background(), params); err != nil {
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
					benchPaths(b, era, clients, off, on, [2]string{"off", "on"})
				})
			}
		})
	}
}

var _ = upstream.EraModern
