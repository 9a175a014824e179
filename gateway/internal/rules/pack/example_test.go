package pack_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/gateway/internal/rules/pack"
)

// The GitHub pack for an upstream running the GitHub MCP server, which
// does not serve tools/resolve: its issue_write tool is resolved per call.
func Example() {
	name, _ := pack.Detect("github-mcp-server") // from the upstream's serverInfo
	rs, err := pack.Rules(name)
	if err != nil {
		panic(err)
	}
	r, err := rules.Compile(rules.Config{Servers: map[string]rules.Server{"github": {Pack: rs}}})
	if err != nil {
		panic(err)
	}
	// issue_write as the server lists it: not read-only, destructiveHint
	// left out (so destructive, by the protocol's default).
	issueWrite := &mcp.Tool{
		Name: "issue_write",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"method": map[string]any{"type": "string", "enum": []any{"create", "update"}},
			"owner":  map[string]any{"type": "string"},
			"repo":   map[string]any{"type": "string"},
		}},
		Annotations: &mcp.ToolAnnotations{Title: "Create or update issue/pull request"},
	}
	res, err := r.Resolve(context.Background(), rules.Call{
		Server:    "github",
		Tool:      issueWrite,
		Arguments: json.RawMessage(`{"method":"create","owner":"octo","repo":"hello"}`),
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Rule, res.Effective.Effect.Value, res.NeedsConfirmation())
	// Output: github/issue_write/write write false
}
