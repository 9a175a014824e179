package gateway_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/resolve"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestOptionsFromConfigTracing: tracing is off without the section (no
// provider: the chain is compiled untraced), and on with it, its
// provider shut down by the options' Close.
func TestOptionsFromConfigTracing(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml string
		on   bool
	}{
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\n"},
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\ntracing: {enabled: false, endpoint: \"http://127.0.0.1:1\"}\n"},
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\ntracing: {enabled: true, endpoint: \"http://127.0.0.1:1\", sampleRatio: 0.5}\n", on: true},
	} {
		cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(tc.yaml), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := setup.Options(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := opts.TracerProvider != nil; got != tc.on {
			t.Errorf("%q: tracing on = %v, want %v", tc.yaml, got, tc.on)
		}
		if err := opts.Close(); err != nil {
			t.Errorf("%q: Close: %v", tc.yaml, err)
		}
		if tc.on {
			// A provider shut down records nothing.
			if _, span := opts.TracerProvider.Tracer("test").Start(context.Background(), "after"); span.IsRecording() {
				t.Errorf("%q: the provider was not shut down by Close", tc.yaml)
			}
		}
	}
}

// TestTracedRequestsToUpstream checks on the wire that every request the
// gateway sends an upstream for a traced call carries, in _meta, the trace
// context of a span of its own in the call's trace: the call
// (tools/call), the resolve stage's tools/resolve, completion/complete and
// a 2025-11-25 upstream's resources/subscribe; for a client and an
// upstream of each era.
func TestTracedRequestsToUpstream(t *testing.T) {
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })

			s := notesServer()
			rs := resolve.NewServer(s, nil)
			resolve.AddTool(rs, &mcp.Tool{Name: "look"}, func(context.Context, *mcp.CallToolRequest, struct{ Path string }) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked"}}}, nil, nil
			}, resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
				return resolve.Resolution{Annotations: preflight.Annotations{ReadOnlyHint: true}}, nil
			}))
			var mu sync.Mutex
			sent := map[string]string{} // method -> the traceparent of its _meta
			s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if p := req.GetParams(); p != nil {
						if v, ok := p.GetMeta()["traceparent"].(string); ok {
							mu.Lock()
							sent[method] = v
							mu.Unlock()
						}
					}
					return next(ctx, method, req)
				}
			})
			_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "notes", URL: serveEra(t, s, era)}}, TracerProvider: tp})
			cs := connect(t, url, era, nil, nil)
			ctx := t.Context()
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "look", Arguments: map[string]any{"Path": "a"}}); err != nil || res.IsError {
				t.Fatalf("tools/call: %v %v", err, res)
			}
			if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greeting"},
				Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}}); err != nil {
				t.Fatalf("completion/complete: %v", err)
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
				t.Fatalf("resources/subscribe: %v", err)
			}

			spans := exp.GetSpans()
			byID := map[trace.SpanID]tracetest.SpanStub{}
			for _, s := range spans {
				byID[s.SpanContext.SpanID()] = s
			}
			// root returns the name of the span at the top of s's trace.
			root := func(s tracetest.SpanStub) string {
				for {
					p, ok := byID[s.Parent.SpanID()]
					if !ok {
						return s.Name
					}
					s = p
				}
			}
			checks := map[string]string{ // method to the upstream -> the client's method whose trace it is in
				"tools/call": "tools/call", "tools/resolve": "tools/call", "completion/complete": "completion/complete",
			}
			if era == legacy {
				// A 2026-07-28 upstream is subscribed to by a
				// subscriptions/listen stream, which the SDK opens outside
				// the call, without its _meta.
				checks["resources/subscribe"] = "resources/subscribe"
			}
			for method, call := range checks {
				var span *tracetest.SpanStub
				for i := range spans {
					if spans[i].Name == "upstream "+method {
						span = &spans[i]
					}
				}
				if span == nil {
					t.Errorf("no span upstream %s among %d spans", method, len(spans))
					continue
				}
				sc := span.SpanContext
				if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; sent[method] != want {
					t.Errorf("the upstream's %s had traceparent %q, want its round trip's %q (%v)", method, sent[method], want, sent)
				}
				if got := root(*span); got != call {
					t.Errorf("upstream %s is in the trace of %q, want %q's", method, got, call)
				}
			}
		})
	}
}
