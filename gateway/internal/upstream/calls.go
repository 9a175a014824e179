package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
)

// rawResult keeps a custom method's result as it came.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// resolveParams are the params of tools/resolve, with the arguments as the
// client sent them.
type resolveParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// registerResolve lets the client send tools/resolve.
func registerResolve(client *mcp.Client) {
	if err := mcp.AddSendingCustomMethod[*resolveParams, *rawResult](client, preflight.MethodResolve); err != nil {
		panic(err) // only if the SDK made tools/resolve a standard method
	}
}

// Resolve asks the upstream's tools/resolve about a call of its tool name
// with arguments, and returns its answer (either shape) and the raw
// result.
func (c *Conn) Resolve(ctx context.Context, name string, arguments json.RawMessage) (_ *preflight.ResolveResult, _ json.RawMessage, err error) {
	ctx, span := c.request(ctx, preflight.MethodResolve)
	defer func() { tracing.End(span, err) }()
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	p := &resolveParams{Name: name, Arguments: arguments}
	p.Meta = tracing.Inject(ctx, nil)
	res, err := mcp.CallCustomMethod[*resolveParams, *rawResult](ctx, cs, preflight.MethodResolve, p)
	if err != nil {
		return nil, nil, err
	}
	var out preflight.ResolveResult
	if err := json.Unmarshal(res.raw, &out); err != nil {
		return nil, res.raw, fmt.Errorf("tools/resolve result: %w", err)
	}
	return &out, res.raw, nil
}

// Complete forwards completion/complete.
func (c *Conn) Complete(ctx context.Context, p *mcp.CompleteParams) (_ *mcp.CompleteResult, err error) {
	ctx, span := c.request(ctx, "completion/complete")
	defer func() { tracing.End(span, err) }()
	cs, era, err := c.sessionFor(ctx)
	if err != nil {
		return nil, err
	}
	if p != nil {
		pp := *p
		pp.Meta = tracing.Inject(ctx, prepareMeta(p.Meta, era >= EraModern))
		p = &pp
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	return cs.Complete(ctx, p)
}

// Subscribe subscribes to updates of the resource at uri.
func (c *Conn) Subscribe(ctx context.Context, uri string) (err error) {
	ctx, span := c.request(ctx, "resources/subscribe")
	defer func() { tracing.End(span, err) }()
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	p := &mcp.SubscribeParams{URI: uri}
	p.Meta = tracing.Inject(ctx, nil)
	return cs.Subscribe(ctx, p)
}

// Unsubscribe ends a subscription.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) (err error) {
	ctx, span := c.request(ctx, "resources/unsubscribe")
	defer func() { tracing.End(span, err) }()
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	p := &mcp.UnsubscribeParams{URI: uri}
	p.Meta = tracing.Inject(ctx, nil)
	return cs.Unsubscribe(ctx, p)
}

// request starts the span of a request the gateway makes of the upstream
// itself (tools/resolve, completion/complete, resources/subscribe and
// unsubscribe) when the call that needs it is traced (tracing.Start); the
// upstream gets its trace context in _meta.
func (c *Conn) request(ctx context.Context, method string) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		return tracing.Start(ctx, method, trace.SpanKindClient)
	}
	return tracing.Start(ctx, "upstream "+method, trace.SpanKindClient,
		tracing.Method.String(method), tracing.Server.String(c.spec.Name), tracing.UpEra.String(c.Era()))
}
