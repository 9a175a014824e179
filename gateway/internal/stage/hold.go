package stage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Holder counts the calls in flight on each upstream.
type Holder interface {
	// Hold counts a call on conn until release is called; ok is false
	// when conn was retired by a reload and takes no more calls.
	Hold(conn *upstream.Conn) (release func(), ok bool)
}

// Hold counts the call on its upstream until it ends, so that a reload
// stops a removed or replaced upstream only when its calls in flight are
// done; a call that arrives after its upstream was retired is refused like
// an unknown name.
type Hold struct {
	Holder Holder
}

// Name implements call.Stage.
func (*Hold) Name() string { return "hold" }

// Serve implements call.Stage.
func (h *Hold) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Upstream == nil {
		return next.Serve(ctx, c)
	}
	release, ok := h.Holder.Hold(c.Upstream)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("upstream %q was removed from the configuration; list again", c.Upstream.Name())}
	}
	defer release()
	return next.Serve(ctx, c)
}
