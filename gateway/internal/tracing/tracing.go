// Package tracing holds what the gateway's spans share: the names of their
// attributes and the W3C trace context (traceparent, tracestate) read from
// a client's request and written into what goes to an upstream. The spans
// themselves are made in two places: the chain (package call) and the
// forwarder's upstream round trip (package forward).
package tracing

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
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
	Method   = attribute.Key("mcp.method.name")
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
// names none.
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
		return propagator.Extract(ctx, propagation.HeaderCarrier(header))
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
