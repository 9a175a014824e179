package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// PinChecker answers whether a call to an upstream's tool may go ahead:
// nil, an error matching [pin.ErrQuarantined], or another error when it
// cannot tell. [*pin.Pinner] is one.
type PinChecker interface {
	Allowed(ctx context.Context, server, tool string) error
}

// Pin refuses a call of a quarantined tool before anything reaches the
// upstream: its definition changed since it was approved (package pin), so
// its annotations, on which every later stage decides, are not to be
// trusted. A tools/call gets a tool error that names the tool, what
// changed and how to approve it (outcome "quarantined"); a tools/resolve
// gets it as a -32603, on which clients fall back to the static
// annotations (the upstream is not asked about the tool either). When the pins cannot be read the call is refused (fail closed).
type Pin struct {
	Pins PinChecker
}

// Name implements call.Stage.
func (*Pin) Name() string { return "pin" }

// Methods implements call.Scoped.
func (*Pin) Methods() []string { return []string{call.ToolsCall, call.ToolsResolve} }

// Serve implements call.Stage.
func (p *Pin) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Upstream == nil {
		return next.Serve(ctx, c)
	}
	err := p.Pins.Allowed(ctx, c.Upstream.Name(), c.Target)
	switch {
	case err == nil:
		return next.Serve(ctx, c)
	case errors.Is(err, pin.ErrQuarantined):
		c.Outcome = "quarantined"
		if c.Method != call.ToolsCall {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return call.ToolError(err.Error()), nil
	}
	c.Outcome = "error"
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("tool %q was not called: the gateway cannot read the pinned definitions of server %q to check it", text.Clip(c.Name, quoteLimit), text.Clip(c.Upstream.Name(), quoteLimit))}
}
