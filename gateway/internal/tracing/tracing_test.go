package tracing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

const (
	trace1 = "4bf92f3577b34da6a3ce929d0e0e4736"
	span1  = "00f067aa0ba902b7"
	tp1    = "00-" + trace1 + "-" + span1 + "-01"
	trace2 = "11111111111111111111111111111111"
	span2  = "2222222222222222"
	tp2    = "00-" + trace2 + "-" + span2 + "-00"
)

// header returns HTTP headers holding the pairs, a key repeated as often
// as it is given.
func header(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h
}

func TestParent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		meta   string
		header http.Header
		// want is the remote span's trace-span-flags, "" for none.
		want, state string
	}{
		{name: "from _meta", meta: `{"traceparent":"` + tp1 + `","tracestate":"a=1"}`,
			want: trace1 + "-" + span1 + "-01", state: "a=1"},
		{name: "_meta before headers", meta: `{"progressToken":1,"traceparent":"` + tp1 + `"}`,
			header: header("traceparent", tp2, "tracestate", "b=2"), want: trace1 + "-" + span1 + "-01"},
		{name: "headers when _meta has no traceparent", meta: `{"tracestate":"a=1"}`,
			header: header("Traceparent", tp2, "Tracestate", "b=2"), want: trace2 + "-" + span2 + "-00", state: "b=2"},
		{name: "headers when _meta's traceparent is no string", meta: `{"traceparent":1}`,
			header: header("traceparent", tp2), want: trace2 + "-" + span2 + "-00"},
		{name: "headers without _meta", header: header("traceparent", tp1), want: trace1 + "-" + span1 + "-01"},
		{name: "invalid _meta traceparent hides the headers", meta: `{"traceparent":"00-` + trace1 + `-` + span1 + `"}`,
			header: header("traceparent", tp2)},
		{name: "upper-case hex", meta: `{"traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-` + span1 + `-01"}`},
		{name: "zero trace id", meta: `{"traceparent":"00-00000000000000000000000000000000-` + span1 + `-01"}`},
		{name: "zero span id", header: header("traceparent", "00-"+trace1+"-0000000000000000-01")},
		{name: "version ff", header: header("traceparent", "ff-"+trace1+"-"+span1+"-01")},
		{name: "version 00 with more fields", header: header("traceparent", tp1+"-extra")},
		{name: "empty traceparent", meta: `{"traceparent":""}`},
		{name: "invalid tracestate keeps the trace", meta: `{"traceparent":"` + tp1 + `","tracestate":"no list"}`,
			want: trace1 + "-" + span1 + "-01"},
		{name: "repeated traceparent headers name none", header: header("traceparent", tp1, "traceparent", tp2)},
		{name: "repeated tracestate headers are joined", header: header("traceparent", tp1, "tracestate", "a=1", "tracestate", "b=2"),
			want: trace1 + "-" + span1 + "-01", state: "a=1,b=2"},
		{name: "nothing over stdio"},
		{name: "nothing in _meta or headers", meta: `{"progressToken":1}`, header: header("accept", "*/*")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := trace.SpanContextFromContext(tracing.Parent(t.Context(), json.RawMessage(tc.meta), tc.header))
			if tc.want == "" {
				if sc.IsValid() {
					t.Fatalf("span %s-%s, want none", sc.TraceID(), sc.SpanID())
				}
				return
			}
			if got := sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(); got != tc.want {
				t.Errorf("span %s, want %s", got, tc.want)
			}
			if !sc.IsRemote() {
				t.Error("span not remote")
			}
			if got := sc.TraceState().String(); got != tc.state {
				t.Errorf("tracestate %q, want %q", got, tc.state)
			}
		})
	}
}

// TestParentKeepsSpan: within a call (a question's answer), the call's span
// stays the parent whatever the request names.
func TestParentKeepsSpan(t *testing.T) {
	t.Parallel()
	ctx, span := tracer(t).Start(t.Context(), "call")
	defer span.End()
	got := trace.SpanContextFromContext(tracing.Parent(ctx, json.RawMessage(`{"traceparent":"`+tp1+`"}`), header("traceparent", tp2)))
	if !got.Equal(span.SpanContext()) {
		t.Errorf("span %s-%s, want the call's %s-%s", got.TraceID(), got.SpanID(), span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	if tp, ts := tracing.Context(t.Context()); tp != "" || ts != "" {
		t.Errorf("without a span: %q %q, want none", tp, ts)
	}
	remote := tracing.Parent(t.Context(), json.RawMessage(`{"traceparent":"`+tp1+`","tracestate":"a=1,b=2"}`), nil)
	if tp, ts := tracing.Context(remote); tp != tp1 || ts != "a=1,b=2" {
		t.Errorf("of the remote span: %q %q, want %q %q", tp, ts, tp1, "a=1,b=2")
	}
	unsampled := tracing.Parent(t.Context(), nil, header("traceparent", tp2))
	if tp, ts := tracing.Context(unsampled); tp != tp2 || ts != "" {
		t.Errorf("of an unsampled remote span: %q %q, want %q", tp, ts, tp2)
	}
}

// TestUpstreamContinuesTrace: the trace context of the round trip's span,
// written into the upstream request's _meta in place of the client's, makes
// that span the parent of the upstream's, in the client's trace.
func TestUpstreamContinuesTrace(t *testing.T) {
	t.Parallel()
	client := json.RawMessage(`{"traceparent":"` + tp1 + `","tracestate":"a=1","progressToken":7}`)
	ctx, span := tracer(t).Start(tracing.Parent(t.Context(), client, nil), "round trip")
	defer span.End()
	tp, ts := tracing.Context(ctx)
	if want := "00-" + trace1 + "-" + span.SpanContext().SpanID().String() + "-01"; tp != want || ts != "a=1" {
		t.Fatalf("round trip's context %q %q, want %q %q", tp, ts, want, "a=1")
	}

	req := wire.Request(json.RawMessage("1"), "tools/call", wire.Params{Name: "f", Meta: client, TraceParent: tp, TraceState: ts})
	params, _, _ := rawjson.Get(req, "params")
	meta, _, _ := rawjson.Get(params, "_meta")
	if want := `{"traceparent":"` + tp + `","tracestate":"a=1","progressToken":7}`; string(meta) != want {
		t.Errorf("upstream _meta %s, want %s", meta, want)
	}
	upstream := trace.SpanContextFromContext(tracing.Parent(context.Background(), meta, nil))
	if upstream.TraceID() != span.SpanContext().TraceID() || upstream.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("upstream's parent %s-%s, want the round trip %s-%s", upstream.TraceID(), upstream.SpanID(),
			span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
}

// tracer returns a tracer that samples what its parent sampled and
// exports nothing.
func tracer(t *testing.T) trace.Tracer {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tp.Tracer(tracing.Scope)
}
