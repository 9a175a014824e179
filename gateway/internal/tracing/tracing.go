// Package tracing holds what the gateway's spans share: the names of their
// attributes and the W3C trace context (traceparent, tracestate) read from
// a client's request and written into what goes to an upstream. The spans
// themselves are made by the chain (package call: the call and its stages),
// the forwarder (package forward: each attempt to send a call, each wait
// before a retry) and the upstream connection (package upstream: its own
// requests, such as tools/resolve and completion/complete).
package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// The name of the gateway's tracer (its instrumentation scope).
const Scope = "github.com/preflightmcp/preflight/gateway"

// The attributes of the gateway's spans; never an argument's value or a
// result.
const (
	Server   = attribute.Key("preflight.server")   // the upstream's name
	Tool     = attribute.Key("preflight.tool")     // the tool, prompt or URI as the client named it
	Effect   = attribute.Key("preflight.effect")   // the resolution's effect
	Decision = attribute.Key("preflight.decision") // allow, confirm or deny
	Outcome  = attribute.Key("preflight.outcome")  // how the call ended (call.Call.Outcome)
	Era      = attribute.Key("preflight.era")      // the client's protocol version
	UpEra    = attribute.Key("preflight.upstream.era")
	Attempt  = attribute.Key("preflight.attempt")
	Failure  = attribute.Key("preflight.failure") // a transient failure's kind, before a retry
	Method   = attribute.Key("mcp.method.name")
	// ErrorType is what kind of error a failed span ended with (see
	// [Fail]), never the error's text.
	ErrorType = attribute.Key("error.type")
)

// The _meta keys and HTTP headers of the W3C trace context.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

var propagator = propagation.TraceContext{}

// Parent returns ctx with the remote span a request names: its _meta's
// traceparent and tracestate when it has a traceparent, else its HTTP
// headers' (nil over stdio). ctx is returned as it is when it carries a
// span already (a question's answer, within its call) or the request
// names none. As W3C Trace Context asks, repeated traceparent headers name
// none, and repeated tracestate headers are joined.
func Parent(ctx context.Context, meta json.RawMessage, header http.Header) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if len(meta) > 0 {
		if tp, ok, _ := rawjson.GetString(meta, TraceParent); ok {
			c := carrier{TraceParent: tp}
			if ts, ok, _ := rawjson.GetString(meta, TraceState); ok {
				c[TraceState] = ts
			}
			return propagator.Extract(ctx, c)
		}
	}
	if header != nil {
		return propagator.Extract(ctx, headerCarrier(header))
	}
	return ctx
}

// Context returns the traceparent and tracestate of ctx's span, for the
// upstream; both empty when ctx has none.
func Context(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := carrier{}
	propagator.Inject(ctx, c)
	return c[TraceParent], c[TraceState]
}

// Inject sets the traceparent and tracestate of ctx's span in meta, the
// _meta of a request to an upstream, in place of any the client sent, and
// returns meta (made when nil). With no span in ctx, meta is returned as
// it is.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	tp, ts := Context(ctx)
	if tp == "" {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[TraceParent] = tp
	delete(meta, TraceState)
	if ts != "" {
		meta[TraceState] = ts
	}
	return meta
}

// Recording reports whether ctx's span records: whether code below the
// chain should make spans ([Start]). Callers ask before they build a
// span's name and attributes, so that an untraced call allocates nothing
// for them.
func Recording(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// Start starts a span named name under ctx's, made by the provider of
// ctx's span: the gateway's when the call is traced. When ctx's span
// records nothing (tracing is off, or the trace is not sampled), no span
// is made: ctx is returned with a span that does nothing. Code below the
// chain makes its spans with Start and needs no tracer of its own.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// noSpan is the span of [Start] when it makes none: it records nothing and
// ending it does nothing (never the caller's span).
var noSpan = trace.SpanFromContext(context.Background())

// Fail marks span failed by err, when err is not nil, with the kind of
// error and never its text, which may quote what a peer sent (an
// argument, a path): error.type and the status's description are the
// JSON-RPC code for a JSON-RPC error, "timeout" or "canceled" for a
// context's end, else "_OTHER".
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	kind := "_OTHER"
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		kind = strconv.FormatInt(je.Code, 10)
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.Is(err, context.Canceled):
		kind = "canceled"
	}
	span.SetAttributes(ErrorType.String(kind))
	span.SetStatus(codes.Error, kind)
}

// headerCarrier reads the trace context from HTTP headers: a traceparent
// only when there is exactly one, all tracestate values as one list.
type headerCarrier http.Header

func (h headerCarrier) Get(key string) string {
	values := http.Header(h).Values(key)
	if key == TraceParent && len(values) != 1 {
		return ""
	}
	return strings.Join(values, ",")
}
func (h headerCarrier) Set(key, value string) { http.Header(h).Set(key, value) }
func (h headerCarrier) Keys() []string        { return propagation.HeaderCarrier(h).Keys() }

// FailTool marks a call's span failed by a tool's error result (isError),
// as the semantic conventions of MCP ask: error.type tool_error.
func FailTool(span trace.Span) {
	span.SetAttributes(ErrorType.String("tool_error"))
	span.SetStatus(codes.Error, "tool_error")
}

// End ends span, failed by err when err is not nil ([Fail]).
func End(span trace.Span, err error) {
	Fail(span, err)
	span.End()
}

// carrier is a propagation.TextMapCarrier over a small map.
type carrier map[string]string

func (c carrier) Get(key string) string { return c[key] }
func (c carrier) Set(key, value string) { c[key] = value }
func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
