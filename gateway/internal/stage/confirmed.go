package stage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Confirmed is the guard after the stages that confirm calls (ask,
// approve): a call whose decision is Confirm and that nobody confirmed is
// refused with a tool error that says why and what to do; a denied call is
// refused with its reason. A call confirmed in band does not satisfy a
// decision that demands out-of-band approval. Calls in dry-run, allowed
// calls and calls without a decision pass.
type Confirmed struct{}

// Name implements call.Stage.
func (*Confirmed) Name() string { return "confirmed" }

// Methods implements call.Scoped.
func (*Confirmed) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (*Confirmed) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	d := c.Decision
	if d == nil || d.DryRun || d.Verdict == call.Allow {
		return next.Serve(ctx, c)
	}
	what := fmt.Sprintf("%s on %s", text.Clip(c.Name, quoteLimit), upstreamName(c))
	switch {
	case d.Verdict == call.Deny:
		c.Outcome = "denied"
		return call.ToolError(fmt.Sprintf("The gateway refused the call of %s: %s. It was not run, and the upstream was not contacted.", what, d.Reason)), nil
	case c.Confirmation == nil || (d.OutOfBand && c.Confirmation.By == "client"):
		c.Outcome = "denied"
		if d.OutOfBand {
			return call.ToolError(fmt.Sprintf("The call of %s was not run: it needs a person's approval out of band (%s), and this gateway has no out-of-band approval configured. Ask the deployer to configure approvals, or to change the rule.", what, d.Reason)), nil
		}
		return call.ToolError(fmt.Sprintf("The call of %s was not run: it needs confirmation (%s), and this client cannot be asked for it. Use a client that declares form elicitation, or ask the deployer to configure out-of-band approval or a decision rule that allows the call.", what, d.Reason)), nil
	}
	return next.Serve(ctx, c)
}

func upstreamName(c *call.Call) string {
	if c.Tool != nil {
		return "server " + c.Tool.Upstream
	}
	if c.Upstream != nil {
		return "server " + c.Upstream.Name()
	}
	return "the gateway"
}
