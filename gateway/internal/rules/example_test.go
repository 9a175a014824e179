package rules_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
)

// A deployer's rules for an upstream whose manage_files tool declares its
// worst case (destructive) statically: reads and appends need no
// confirmation, deletes keep it.
func Example() {
	yes, no := true, false
	r, err := rules.Compile(rules.Config{Servers: map[string]rules.Server{
		"files": {Rules: []rules.Rule{
			{
				Name:        "read",
				Tools:       []string{"manage_files"},
				When:        `args.action == "read"`,
				Annotations: rules.AnnotationPatch{ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes},
				Hints:       rules.HintPatch{Effect: "read"},
			},
			{
				Name:        "append",
				Tools:       []string{"manage_files"},
				When:        `args.action == "append" && !args.path.endsWith(".env")`,
				Annotations: rules.AnnotationPatch{DestructiveHint: &no},
				Hints:       rules.HintPatch{Effect: "write"},
			},
		}},
	}})
	if err != nil {
		panic(err)
	}
	tool := &mcp.Tool{
		Name: "manage_files",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"action": map[string]any{"type": "string", "enum": []any{"read", "append", "delete"}},
			"path":   map[string]any{"type": "string"},
		}},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes},
	}
	if err := r.SetTools("files", []*mcp.Tool{tool}); err != nil {
		panic(err)
	}
	for _, args := range []string{
		`{"action":"read","path":"notes.txt"}`,
		`{"action":"append","path":"notes.txt"}`,
		`{"action":"append","path":".env"}`,
		`{"action":"delete","path":"notes.txt"}`,
	} {
		res, err := r.Resolve(context.Background(), rules.Call{Server: "files", Tool: tool, Arguments: json.RawMessage(args)}, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-40s %-6s %-6s confirm=%v\n", args, res.Layer, res.Rule, res.NeedsConfirmation())
	}
	// Output:
	// {"action":"read","path":"notes.txt"}     rule   read   confirm=false
	// {"action":"append","path":"notes.txt"}   rule   append confirm=false
	// {"action":"append","path":".env"}        static        confirm=true
	// {"action":"delete","path":"notes.txt"}   static        confirm=true
}

// Rules are checked against the tool's input schema once the upstream's
// tools are known.
func ExampleRules_SetTools() {
	yes := true
	r, err := rules.Compile(rules.Config{Servers: map[string]rules.Server{
		"files": {Rules: []rules.Rule{{
			Name:  "erase",
			Tools: []string{"manage_files"},
			When:  `args.action == "erase"`,
			Hints: rules.HintPatch{RequiresConfirmation: &yes},
		}}},
	}})
	if err != nil {
		panic(err)
	}
	tool := &mcp.Tool{Name: "manage_files", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"action": map[string]any{"type": "string", "enum": []any{"read", "delete"}},
	}}}
	fmt.Println(r.SetTools("files", []*mcp.Tool{tool}))
	// Output:
	// server "files": rule "erase": tool "manage_files": argument "action": compared (==) with "erase", which is not one of its values (enum: "read", "delete")
}
