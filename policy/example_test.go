package policy_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// A multi-action tool declares its worst case; the resolution of a read
// call says it is read-only, so the client need not ask.
func ExampleEvaluate() {
	yes := true
	e := policy.Evaluate(policy.Input{
		Static:        &mcp.ToolAnnotations{DestructiveHint: &yes},
		Resolved:      &preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		ResolvedHints: hints.Hints{Effect: hints.EffectRead},
	})
	fmt.Println("read-only:", e.ReadOnly.Value, "from", e.ReadOnly.Source)
	fmt.Println("confirm:", e.NeedsConfirmation(), "from", e.RequiresConfirmation.Source)
	fmt.Println("retry:", e.SafeToRetry())
	// Output:
	// read-only: true from resolved
	// confirm: false from derived
	// retry: true
}
