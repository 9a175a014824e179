package forward

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// local is the final handler of tools/resolve: the gateway answers it
// itself, with package resolve over the tools it mirrors into the SDK
// server (c.Local), from the resolution the resolve stage made.
type local struct{}

func (local) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if c.Local == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: c.Method + " cannot be answered on this path"}
	}
	res, err := c.Local(call.NewContext(ctx, c))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, internalError("encoding the result: %v", err)
	}
	return b, nil
}

// complete is the final handler of completion/complete: it forwards the
// request, as judged, to the upstream of its reference, under the
// upstream's name for it.
type complete struct{ f *Forward }

func (h *complete) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(c.Params, &p); err != nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: params must have a ref and an argument"}
	}
	ref := *p.Ref
	switch ref.Type {
	case "ref/prompt":
		ref.Name = c.Target
	case "ref/resource":
		ref.URI = c.Target
	}
	p.Ref = &ref
	m, err := meta(c)
	if err != nil {
		return nil, err
	}
	p.Meta = m
	c.UpstreamEra = c.Upstream.Era()
	res, err := c.Upstream.Complete(ctx, &p)
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, internalError("encoding the result: %v", err)
	}
	return b, nil
}

// reply is the final handler of an answer: it hands the judged answer to
// the upstream that asked.
type reply struct{}

func (reply) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if c.Reply == nil {
		return nil, internalError("an answer with nowhere to go")
	}
	if err := c.Reply(ctx, c.Arguments); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}
