//go:build integration

package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/jaegertest"
)

// tracedUpstream is an MCP server whose echo tool continues the trace of
// its request's _meta (traceparent, tracestate) with a span of its own,
// exported to otlp; seen records the traceparents it was given.
type tracedUpstream struct {
	mu   sync.Mutex
	seen []string
}

func (u *tracedUpstream) serve(t *testing.T, otlp string) string {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(otlp+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "traced-upstream"))))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("traced-upstream")
	s := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, any, error) {
			carrier := propagation.MapCarrier{}
			for _, k := range []string{"traceparent", "tracestate"} {
				if v, ok := req.Params.Meta[k].(string); ok {
					carrier[k] = v
				}
			}
			u.mu.Lock()
			u.seen = append(u.seen, carrier["traceparent"])
			u.mu.Unlock()
			ctx = propagation.TraceContext{}.Extract(ctx, carrier)
			_, span := tracer.Start(ctx, "echo", trace.WithSpanKind(trace.SpanKindServer))
			span.End()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return serveEra(t, s, modern)
}

// last returns the trace id and parent span id of the traceparent the
// upstream was given last.
func (u *tracedUpstream) last(t *testing.T) (traceID, parent string) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 || u.seen[len(u.seen)-1] == "" {
		t.Fatalf("the upstream got no traceparent in _meta (given %q)", u.seen)
	}
	parts := strings.Split(u.seen[len(u.seen)-1], "-")
	if len(parts) != 4 {
		t.Fatalf("traceparent %q", u.seen[len(u.seen)-1])
	}
	return parts[1], parts[2]
}

// TestTracesInJaeger calls a tool through a gateway that exports its
// traces to a real Jaeger, in front of an upstream that exports its own,
// from a client of each era, without a trace context and with one in
// _meta, and reads each trace back from Jaeger's query API: the call's
// span, a span for every stage of the chain, the round trip to the
// upstream, and the upstream's own span, its child, in the same trace.
func TestTracesInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // the gateway's batches, in ms
	up := &tracedUpstream{}
	upURL := up.serve(t, j.OTLP)
	g, url, _ := gatewayFromConfig(t, fmt.Sprintf(`
servers:
  traced:
    url: %s
tracing:
  enabled: true
  endpoint: %s
  serviceName: preflight-test
`, upURL, j.OTLP))
	stages := gateway.ChainOrder(g, "tools/call")
	if len(stages) == 0 {
		t.Fatal("no stages")
	}

	const clientSpan = "00f067aa0ba902b7"
	for _, tc := range []struct {
		name, era   string
		clientTrace string // the trace id of the client's traceparent in _meta; "" for none
		tracestate  string
	}{
		{name: "modern", era: modern},
		{name: "legacy", era: legacy},
		{name: "modern continues the client's trace", era: modern, clientTrace: "4bf92f3577b34da6a3ce929d0e0e4736", tracestate: "client=1"},
		{name: "legacy continues the client's trace", era: legacy, clientTrace: "5bf92f3577b34da6a3ce929d0e0e4736"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var meta mcp.Meta
			if tc.clientTrace != "" {
				meta = mcp.Meta{"traceparent": "00-" + tc.clientTrace + "-" + clientSpan + "-01"}
				if tc.tracestate != "" {
					meta["tracestate"] = tc.tracestate
				}
			}
			cs := connect(t, url, tc.era, nil, nil)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"Text": "hi"}, Meta: meta})
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %v", err, res)
			}
			traceID, roundTrip := up.last(t)
			if tc.clientTrace != "" && traceID != tc.clientTrace {
				t.Errorf("the upstream's trace id %s, want the client's %s", traceID, tc.clientTrace)
			}
			want := append([]string{"tools/call", "upstream tools/call", "echo"}, stages...)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			tr, err := j.Await(ctx, traceID, func(tr *jaegertest.Trace) bool {
				return !slices.ContainsFunc(want, func(op string) bool { return len(tr.Find(op)) == 0 })
			})
			if err != nil {
				t.Fatalf("%v; spans: %v", err, operations(tr))
			}
			span := func(op string) jaegertest.Span {
				t.Helper()
				s := tr.Find(op)
				if len(s) != 1 {
					t.Fatalf("%d spans %q in %v", len(s), op, operations(tr))
				}
				return s[0]
			}
			callSpan, rt, echo := span("tools/call"), span("upstream tools/call"), span("echo")
			if got := tr.Service(callSpan); got != "preflight-test" {
				t.Errorf("the call span's service %q", got)
			}
			if got := tr.Service(echo); got != "traced-upstream" {
				t.Errorf("the upstream span's service %q", got)
			}
			if rt.SpanID != roundTrip || echo.Parent() != rt.SpanID {
				t.Errorf("the upstream's span's parent %s (sent %s), want the round trip %s", echo.Parent(), roundTrip, rt.SpanID)
			}
			wantParent := ""
			if tc.clientTrace != "" {
				wantParent = clientSpan
			}
			if callSpan.Parent() != wantParent {
				t.Errorf("the call span's parent %q, want %q", callSpan.Parent(), wantParent)
			}
			for k, v := range map[string]string{"preflight.tool": "echo", "preflight.server": "traced",
				"preflight.era": tc.era, "preflight.outcome": "ok", "preflight.effect": "read"} {
				if got := callSpan.Tag(k); got != v {
					t.Errorf("call span %s = %q, want %q", k, got, v)
				}
			}
			// The stages nest in the chain's order under the call's span;
			// the round trip is under the innermost.
			parent := callSpan.SpanID
			for _, name := range stages {
				s := span(name)
				if s.Parent() != parent {
					t.Errorf("stage %s's parent %s, want %s", name, s.Parent(), parent)
				}
				parent = s.SpanID
			}
			if rt.Parent() != parent {
				t.Errorf("the round trip's parent %s, want the last stage's %s", rt.Parent(), parent)
			}
		})
	}
}

func operations(tr *jaegertest.Trace) []string {
	if tr == nil {
		return nil
	}
	var out []string
	for _, s := range tr.Spans {
		out = append(out, s.OperationName)
	}
	slices.Sort(out)
	return out
}
