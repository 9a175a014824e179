package call

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway/internal/tracing"
)

// traced is the head of a method's chain when tracing is on: the call's
// span, continuing the trace the request names (tracing.Parent).
type traced struct {
	tracer trace.Tracer
	next   Handler
}

func (t *traced) Serve(ctx context.Context, c *Call) (json.RawMessage, error) {
	var header http.Header
	if c.Client != nil {
		header = c.Client.Header
	}
	ctx = tracing.Parent(ctx, c.Meta, header)
	ctx, span := t.tracer.Start(ctx, c.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(tracing.Method.String(c.Method)))
	defer span.End()
	res, err := t.next.Serve(ctx, c)
	span.SetAttributes(attributes(c, err)...)
	tracing.Fail(span, err)
	if err == nil && c.Outcome == "tool_error" {
		tracing.FailTool(span)
	}
	return res, err
}

// tracedLink is a link of the chain with the stage's span around it.
type tracedLink struct {
	tracer trace.Tracer
	link
}

func (l *tracedLink) Serve(ctx context.Context, c *Call) (json.RawMessage, error) {
	ctx, span := l.tracer.Start(ctx, l.stage.Name())
	defer span.End()
	res, err := l.stage.Serve(ctx, c, l.next)
	tracing.Fail(span, err)
	return res, err
}

// attributes are what the call's span says of c once it ended with err:
// never an argument's value or a result.
func attributes(c *Call, err error) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, tracing.Tool.String(c.Name))
	if c.Upstream != nil {
		attrs = append(attrs, tracing.Server.String(c.Upstream.Name()))
	}
	if c.Client != nil {
		attrs = append(attrs, tracing.Era.String(c.Client.Version))
	}
	if c.UpstreamEra != "" {
		attrs = append(attrs, tracing.UpEra.String(c.UpstreamEra))
	}
	if c.Resolution != nil {
		attrs = append(attrs, tracing.Effect.String(string(c.Resolution.Effect())))
	}
	if c.Decision != nil {
		attrs = append(attrs, tracing.Decision.String(string(c.Decision.Verdict)))
	}
	return append(attrs, tracing.Outcome.String(c.Ended(err)))
}
