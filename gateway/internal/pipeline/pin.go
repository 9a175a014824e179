package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// PinChecker answers whether a call to an upstream's tool may go ahead:
// nil, an error matching [pin.ErrQuarantined], or another error when it
// cannot tell. [*pin.Pinner] is one.
type PinChecker interface {
	Allowed(ctx context.Context, server, tool string) error
}

// Pin refuses a tools/call of a quarantined tool before anything reaches
// the upstream: its definition changed since it was approved (package
// gateway/pin), so its annotations, on which every later stage decides,
// are not to be trusted. The client gets a tool error (isError) that names
// the tool, what changed and how to approve it, and the outcome is
// "quarantined". When the pins cannot be read for a tool nothing is known
// of, the call is refused with an internal error (fail closed). It runs
// after route, which names the upstream and its tool; other methods pass
// through.
func Pin(p PinChecker) Stage {
	return Stage{Name: "pin", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			if c.Method != upstream.MethodCallTool || c.Upstream == nil {
				return next.Serve(ctx, c)
			}
			err := p.Allowed(ctx, c.Upstream.Name(), c.Target)
			switch {
			case err == nil:
				return next.Serve(ctx, c)
			case errors.Is(err, pin.ErrQuarantined):
				c.Outcome = "quarantined"
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
			}
			c.Outcome = "error"
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("tool %q was not called: the gateway cannot read the pinned definitions of server %q to check it", clip(c.Name), clip(c.Upstream.Name()))}
		})
	}}
}
