package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestFailNamesTheKindNeverTheText: a failed span says what kind of error
// ended it, never the error's text, which may quote an argument.
func TestFailNamesTheKindNeverTheText(t *testing.T) {
	t.Parallel()
	const secret = "/home/alice/tax-2025.pdf"
	for _, tc := range []struct {
		err  error
		kind string
	}{
		{&jsonrpc.Error{Code: -32602, Message: "no such file " + secret}, "-32602"},
		{fmt.Errorf("upstream %q: %w", "files", &jsonrpc.Error{Code: -32603, Message: secret}), "-32603"},
		{fmt.Errorf("reading %s: %w", secret, context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("reading %s: %w", secret, context.Canceled), "canceled"},
		{errors.New("open " + secret + ": permission denied"), "_OTHER"},
	} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		_, span := tp.Tracer("test").Start(context.Background(), "call")
		Fail(span, tc.err)
		span.End()
		got := exp.GetSpans()[0]
		if got.Status.Code != codes.Error || got.Status.Description != tc.kind {
			t.Errorf("%v: status %v %q, want Error %q", tc.err, got.Status.Code, got.Status.Description, tc.kind)
		}
		var typ string
		for _, a := range got.Attributes {
			if a.Key == ErrorType {
				typ = a.Value.String()
			}
		}
		if typ != tc.kind {
			t.Errorf("%v: error.type %q, want %q", tc.err, typ, tc.kind)
		}
		if s := fmt.Sprint(got.Status, got.Attributes, got.Events); strings.Contains(s, "alice") {
			t.Errorf("%v: the span quotes the error: %s", tc.err, s)
		}
		tp.Shutdown(context.Background())
	}
}

// TestInject: the upstream gets the trace context of ctx's span in place
// of the client's; without a span, the _meta it would have got.
func TestInject(t *testing.T) {
	t.Parallel()
	client := map[string]any{TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TraceState: "client=1", "progressToken": 7}
	if got := Inject(context.Background(), client); got[TraceParent] != client[TraceParent] || got[TraceState] != "client=1" {
		t.Errorf("without a span: %v", got)
	}
	if got := Inject(context.Background(), nil); got != nil {
		t.Errorf("without a span or _meta: %v", got)
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "round trip")
	defer span.End()
	sc := span.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	got := Inject(ctx, map[string]any{TraceParent: client[TraceParent], TraceState: "client=1", "progressToken": 7})
	if got[TraceParent] != want || got["progressToken"] != 7 {
		t.Errorf("with a span: %v, want traceparent %s and the other keys", got, want)
	}
	if _, ok := got[TraceState]; ok {
		t.Errorf("the client's tracestate went on with another trace context: %v", got)
	}
	if got := Inject(ctx, nil); got[TraceParent] != want {
		t.Errorf("with a span and no _meta: %v", got)
	}
}

// TestStart: a span under a recording one is made by its provider; under
// none, or under one not sampled, nothing is made and a span that does
// nothing is returned.
func TestStart(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ctx, parent := tp.Tracer("test").Start(context.Background(), "call")
	_, child := Start(ctx, "upstream tools/resolve", trace.SpanKindClient, Server.String("files"))
	child.End()
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "upstream tools/resolve" || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() || spans[0].SpanKind != trace.SpanKindClient {
		t.Fatalf("spans %+v", spans)
	}

	if c, s := Start(context.Background(), "x", trace.SpanKindClient); s.IsRecording() || c != context.Background() {
		t.Error("a span was made without a traced call")
	}
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSyncer(exp))
	defer never.Shutdown(context.Background())
	exp.Reset()
	ctx, unsampled := never.Tracer("test").Start(context.Background(), "call")
	if c, s := Start(ctx, "x", trace.SpanKindClient); s.IsRecording() || s.SpanContext().IsValid() || c != ctx {
		t.Error("a span was made under a trace not sampled")
	}
	if !unsampled.SpanContext().IsValid() {
		t.Fatal("the unsampled call has no span context")
	}
	// What Start gives is not the caller's span: ending it leaves the
	// caller's as it was.
	_, s := Start(ctx, "x", trace.SpanKindClient)
	s.End()
	if s == trace.SpanFromContext(ctx) {
		t.Error("Start gave the caller's own span")
	}
}
