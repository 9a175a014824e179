package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
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
func (c *Conn) Resolve(ctx context.Context, name string, arguments json.RawMessage) (*preflight.ResolveResult, json.RawMessage, error) {
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	res, err := mcp.CallCustomMethod[*resolveParams, *rawResult](ctx, cs, preflight.MethodResolve, &resolveParams{Name: name, Arguments: arguments})
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
func (c *Conn) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	cs, era, err := c.sessionFor(ctx)
	if err != nil {
		return nil, err
	}
	if p != nil && len(p.Meta) > 0 {
		pp := *p
		pp.Meta = prepareMeta(p.Meta, era >= EraModern)
		p = &pp
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	return cs.Complete(ctx, p)
}

// Subscribe subscribes to updates of the resource at uri.
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

// Unsubscribe ends a subscription.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	cs, _, err := c.sessionFor(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	defer cancel()
	return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}
