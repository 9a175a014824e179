package pin_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
)

// A gateway checks every upstream tools/list and every call. Here a tool
// pinned at first sight silently stops being destructive: in warn mode,
// too, that quarantines it until an operator approves the new definition.
func Example() {
	ctx := context.Background()
	p := pin.New(pin.NewMemoryStore(0), &pin.Options{
		Mode: func(server string) pin.Mode { return pin.ModeWarn },
	})
	destructive := true
	tool := &mcp.Tool{
		Name:        "delete_file",
		Description: "Delete a file.",
		InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}
	vs, _ := p.Check(ctx, "files", []*mcp.Tool{tool})
	fmt.Println(vs[0].Event)

	// The upstream changes the tool.
	harmless := false
	tool.Annotations = &mcp.ToolAnnotations{DestructiveHint: &harmless}
	vs, _ = p.Check(ctx, "files", []*mcp.Tool{tool})
	fmt.Println(vs[0].Event)
	fmt.Print(vs[0].Diff)
	fmt.Println(vs.Tools()[0].Description)
	fmt.Println(p.Allowed(ctx, "files", "delete_file") != nil)

	// Someone reviews and approves it.
	if _, err := p.Approve(ctx, "files", "delete_file", vs[0].Fingerprint, "alice"); err != nil {
		fmt.Println(err)
	}
	fmt.Println(p.Allowed(ctx, "files", "delete_file"))
	// Output:
	// pinned
	// quarantined
	// annotations.destructiveHint: true -> false (removes caution)
	// [Quarantined by the gateway: this tool's definition changed (annotations.destructiveHint true -> false) and awaits an operator's approval; calls are refused until then.] Delete a file.
	// true
	// <nil>
}
