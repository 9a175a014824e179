package resolve_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

type deployArgs struct {
	Env string `json:"env"`
}

// A server declares a tool resolvable with a table keyed by one argument;
// a client resolves each call before making it.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "v1"}, nil)
	rs := resolve.NewServer(server, nil)
	resolve.AddTool(rs, &mcp.Tool{
		Name: "deploy",
		InputSchema: map[string]any{"type": "object", "required": []any{"env"},
			"properties": map[string]any{"env": map[string]any{"type": "string", "enum": []any{"staging", "production"}}}},
	}, func(context.Context, *mcp.CallToolRequest, deployArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
	}, &resolve.Table{Argument: "env", Rows: map[string]resolve.Resolution{
		"staging":    {Annotations: preflight.Annotations{IdempotentHint: true}, Hints: hints.Hints{RequiresConfirmation: hints.Bool(false)}},
		"production": {Annotations: preflight.Annotations{IdempotentHint: true, OpenWorldHint: true}, Hints: hints.Hints{RequiresConfirmation: hints.Bool(true)}},
	}})

	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := resolve.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	tool := list.Tools[0]
	fmt.Println("tools/list: openWorld =", *tool.Annotations.OpenWorldHint, "requiresConfirmation =", tool.Meta[preflight.MetaRequiresConfirmation])
	for _, env := range []string{"staging", "production"} {
		d, err := resolve.Preflight(ctx, cs, tool, map[string]any{"env": env}, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: confirm=%v retry=%v (%s)\n", env, d.NeedsConfirmation(), d.SafeToRetry(), d.Effective.RequiresConfirmation.Source)
	}
	// Output:
	// tools/list: openWorld = true requiresConfirmation = true
	// staging: confirm=false retry=true (resolved)
	// production: confirm=true retry=true (resolved)
}
