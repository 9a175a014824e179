package pipeline

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Confirmed is the guard after the stages that confirm calls (ask,
// approve): a call whose decision is Confirm and that nobody confirmed is
// refused with a tool error that says why and what to do; a denied call is
// refused with its reason. A call confirmed in band does not satisfy a
// decision that demands out-of-band approval. Calls in dry-run, allowed
// calls and calls without a decision pass.
func Confirmed() Stage {
	return Stage{Name: "confirmed", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			d := c.Decision
			if d == nil || d.DryRun || d.Verdict == Allow {
				return next.Serve(ctx, c)
			}
			what := fmt.Sprintf("%s on %s", clip(c.Name), upstreamName(c))
			switch {
			case d.Verdict == Deny:
				c.Outcome = "denied"
				return ToolError(c, fmt.Sprintf("The gateway refused the call of %s: %s. It was not run, and the upstream was not contacted.", what, d.Reason)), nil
			case c.Confirmation == nil || (d.OutOfBand && c.Confirmation.By == "client"):
				c.Outcome = "denied"
				if d.OutOfBand {
					return ToolError(c, fmt.Sprintf("The call of %s was not run: it needs a person's approval out of band (%s), and this gateway has no out-of-band approval configured. Ask the deployer to configure approvals, or to change the rule.", what, d.Reason)), nil
				}
				return ToolError(c, fmt.Sprintf("The call of %s was not run: it needs confirmation (%s), and this client cannot be asked for it. Use a client that declares form elicitation, or ask the deployer to configure out-of-band approval or a decision rule that allows the call.", what, d.Reason)), nil
			}
			return next.Serve(ctx, c)
		})
	}}
}

func upstreamName(c *Call) string {
	if c.Tool != nil {
		return "server " + c.Tool.Upstream
	}
	if c.Upstream != nil {
		return "server " + c.Upstream.Name()
	}
	return "the gateway"
}

// completeResult is a tool result for a 2026-07-28 client, with its
// resultType, on both call paths.
type completeResult struct {
	mcp.ResultBase
	ResultType string        `json:"resultType"`
	Content    []mcp.Content `json:"content"`
	IsError    bool          `json:"isError,omitempty"`
}

// ToolError returns a tool error result with text, in the client's era:
// the call was refused or ended by the gateway, not by the upstream.
func ToolError(c *Call, text string) mcp.Result {
	content := []mcp.Content{&mcp.TextContent{Text: text}}
	if c.Client != nil && c.Client.Modern {
		return &completeResult{ResultType: "complete", Content: content, IsError: true}
	}
	return &mcp.CallToolResult{Content: content, IsError: true}
}
