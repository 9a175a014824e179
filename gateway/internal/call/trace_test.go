package call_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
	traceparent  = "00-" + clientTrace + "-" + clientParent + "-01"
)

// tracedChain compiles route and decide (tools/call only) in front of
// final, traced into a recorder.
func tracedChain(final call.HandlerFunc) (*call.Chain, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var log []string
	ch := call.CompileTraced(tp.Tracer("test"), map[string]call.Handler{call.ToolsCall: final, call.PromptsGet: final},
		&trace{name: "route", log: &log},
		&scoped{trace{name: "decide", methods: []string{call.ToolsCall}, log: &log}})
	return ch, rec
}

func TestCompileTraced(t *testing.T) {
	t.Parallel()
	ch, rec := tracedChain(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		c.Outcome = "ok"
		c.Decision = &call.Decision{Verdict: call.Allow}
		return json.RawMessage(`{}`), nil
	})
	c := &call.Call{Method: call.ToolsCall, Name: "write_file", Arguments: json.RawMessage(`{"secret":"s3cr3t"}`),
		Meta:   json.RawMessage(`{"traceparent":"` + traceparent + `","tracestate":"k=v"}`),
		Client: &call.Client{Version: "2026-07-28", Header: http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}}}
	if _, err := ch.Serve(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	if len(spans) != 3 || byName["tools/call"] == nil || byName["route"] == nil || byName["decide"] == nil {
		t.Fatalf("spans: %v", names(spans))
	}
	root, route, decide := byName["tools/call"], byName["route"], byName["decide"]
	if got := root.SpanContext().TraceID().String(); got != clientTrace {
		t.Errorf("trace id %s, want the client's _meta's %s", got, clientTrace)
	}
	if got := root.Parent().SpanID().String(); got != clientParent || !root.Parent().IsRemote() {
		t.Errorf("call span's parent %s, want the client's %s", got, clientParent)
	}
	if got := root.Parent().TraceState().Get("k"); got != "v" {
		t.Errorf("tracestate k=%q", got)
	}
	if route.Parent().SpanID() != root.SpanContext().SpanID() || decide.Parent().SpanID() != route.SpanContext().SpanID() {
		t.Error("stage spans are not nested in the chain's order")
	}
	want := map[attribute.Key]string{"preflight.tool": "write_file", "preflight.era": "2026-07-28",
		"preflight.decision": "allow", "preflight.outcome": "ok", "mcp.method.name": "tools/call"}
	got := map[attribute.Key]string{}
	for _, kv := range root.Attributes() {
		got[kv.Key] = kv.Value.String()
		if kv.Value.String() == "s3cr3t" {
			t.Errorf("attribute %s carries an argument's value", kv.Key)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestCompileTracedHeaderAndError(t *testing.T) {
	t.Parallel()
	ch, rec := tracedChain(func(context.Context, *call.Call) (json.RawMessage, error) {
		return nil, errors.New("upstream down")
	})
	c := &call.Call{Method: call.PromptsGet, Name: "p",
		Client: &call.Client{Version: "2025-11-25", Header: http.Header{"Traceparent": {traceparent}}}}
	if _, err := ch.Serve(context.Background(), c); err == nil {
		t.Fatal("the error was lost")
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("spans: %v (decide does not apply to prompts/get)", names(spans))
	}
	for _, s := range spans {
		if s.Status().Code != codes.Error {
			t.Errorf("%s: status %v, want an error", s.Name(), s.Status())
		}
		if got := s.SpanContext().TraceID().String(); got != clientTrace {
			t.Errorf("%s: trace id %s, want the header's %s", s.Name(), got, clientTrace)
		}
	}
}

// TestCompileTracedToolError: a call that ended in a tool's error result
// marks its span failed with error.type tool_error; its stages, which
// passed the result on, are not.
func TestCompileTracedToolError(t *testing.T) {
	t.Parallel()
	ch, rec := tracedChain(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		c.Outcome = "tool_error"
		return json.RawMessage(`{"content":[],"isError":true}`), nil
	})
	if _, err := ch.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Name: "t", Client: &call.Client{Version: "2026-07-28"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Ended() {
		var errorType string
		for _, kv := range s.Attributes() {
			if kv.Key == "error.type" {
				errorType = kv.Value.String()
			}
		}
		if s.Name() == "tools/call" {
			if s.Status().Code != codes.Error || errorType != "tool_error" {
				t.Errorf("the call's span: status %v, error.type %q; want an error, tool_error", s.Status(), errorType)
			}
		} else if s.Status().Code == codes.Error || errorType != "" {
			t.Errorf("stage %s: status %v, error.type %q; want neither", s.Name(), s.Status(), errorType)
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// BenchmarkChain measures the chain alone, two stages in front of a final
// handler, untraced (Compile) and traced into a provider that samples every
// call and drops what it records.
func BenchmarkChain(b *testing.B) {
	final := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
	stages := []call.Stage{&pass{name: "route"}, &pass{name: "decide"}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for name, ch := range map[string]*call.Chain{
		"tracing=off": call.Compile(map[string]call.Handler{call.ToolsCall: final}, stages...),
		"tracing=on":  call.CompileTraced(tp.Tracer("bench"), map[string]call.Handler{call.ToolsCall: final}, stages...),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			c := &call.Call{Method: call.ToolsCall, Name: "f", Client: &call.Client{Version: "2026-07-28"}}
			for b.Loop() {
				if _, err := ch.Serve(context.Background(), c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pass is a stage that only goes on.
type pass struct{ name string }

func (p *pass) Name() string { return p.name }
func (p *pass) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	return next.Serve(ctx, c)
}
