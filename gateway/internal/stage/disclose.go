package stage

import (
	"context"
	"encoding/json"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// Gate checks a call of a tool under progressive disclosure (package
// disclose): a tool whose description the caller's scope has not read is
// refused with TOOL_DESCRIPTION_REQUIRED.
type Gate interface {
	// Check returns the refusal of c (a result or an error), or refused
	// false when the call may go on.
	Check(ctx context.Context, c *call.Call) (res json.RawMessage, err error, refused bool)
}

// Disclose refuses a tools/call of a disclosed tool whose description was
// not read first, so that the refusal is logged, metered and audited like
// any other (outcome "undisclosed"); the upstream is not contacted.
type Disclose struct {
	Gate Gate
}

// Name implements call.Stage.
func (*Disclose) Name() string { return "disclose" }

// Methods implements call.Scoped.
func (*Disclose) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (s *Disclose) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	res, err, refused := s.Gate.Check(ctx, c)
	if !refused {
		return next.Serve(ctx, c)
	}
	c.Outcome = "undisclosed"
	return res, err
}
