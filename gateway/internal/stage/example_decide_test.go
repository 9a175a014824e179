package stage_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// A deployer's rule denies force pushes; without a rule, a destructive
// call is confirmed and a read allowed.
func ExampleNewDecider() {
	d, err := stage.NewDecider(&stage.DecideOptions{Rules: []stage.DecisionRule{{
		Name: "no-force-push", Tools: []string{"push"}, When: `has(args.force) && args.force == true`,
		Verdict: call.Deny, Reason: "force pushes are not allowed",
	}}})
	if err != nil {
		panic(err)
	}
	newCall := func(tool, args string, destructive bool) *call.Call {
		ann := &mcp.ToolAnnotations{ReadOnlyHint: !destructive, DestructiveHint: &destructive}
		c := &call.Call{Method: "tools/call", Name: tool, Target: tool, Arguments: []byte(args), Client: &call.Client{},
			Tool: &catalog.Tool{Name: tool, Upstream: "git", Tool: &mcp.Tool{Name: tool, Annotations: ann}}}
		c.Resolution = stage.Static(c.Tool)
		return c
	}
	for _, c := range []*call.Call{
		newCall("log", `{}`, false),
		newCall("push", `{"force": true}`, true),
		newCall("push", `{}`, true),
	} {
		d := d.Decide(c)
		fmt.Printf("%s %s: %s (%s)\n", c.Name, c.Arguments, d.Verdict, d.Reason)
	}
	// Output:
	// log {}: allow (the call only reads)
	// push {"force": true}: deny (force pushes are not allowed)
	// push {}: confirm (the call is destructive (destructiveHint, from the tool's declaration))
}
