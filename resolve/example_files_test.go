package resolve_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// fileArgs are manage_files's arguments. AddTool infers the input schema
// from them and gives action the table's rows as its enum.
type fileArgs struct {
	Path    string `json:"path" jsonschema:"file path, relative to the root"`
	Action  string `json:"action" jsonschema:"read, append, replace or delete"`
	Content string `json:"content,omitempty" jsonschema:"content for append and replace"`
}

// handler stands for the tool's body: it says what it would do.
func handler(_ context.Context, _ *mcp.CallToolRequest, a fileArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Action + " " + a.Path}}}, nil, nil
}

// filesServer is the README's server: manage_files, resolved by a table
// keyed by its action, on one HTTP path for both protocol eras.
func filesServer() *http.ServeMux {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v1"}, nil)
	rs := resolve.NewServer(server, nil) // installs tools/resolve, markers, capabilities

	resolve.AddTool(rs, &mcp.Tool{Name: "manage_files", Description: "Read, append, replace, or delete file contents"},
		handler, &resolve.Table{
			Argument: "action", // the argument whose value decides
			Rows: map[string]resolve.Resolution{
				"read": {Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
					Hints: hints.Hints{Effect: hints.EffectRead}},
				"append": {Hints: hints.Hints{Effect: hints.EffectWrite}},
				"replace": {Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true},
					Hints: hints.Hints{Effect: hints.EffectWrite, RequiresConfirmation: hints.Bool(true)}},
				"delete": {Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true},
					Hints: hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true)}},
			},
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint.NewHandler(server, nil)) // 2026-07-28 and 2025-11-25 on one path
	return mux
}

// The README's server and client: the client resolves each call before
// making it and asks the user only where the resolution says so. The
// static declaration in tools/list is the table's worst case; a resolved
// call is described by its row alone.
func ExamplePreflight() {
	srv := httptest.NewServer(filesServer())
	defer srv.Close()
	ctx, url := context.Background(), srv.URL+"/mcp"

	client := resolve.NewClient(&mcp.Implementation{Name: "app", Version: "v1"}, nil) // declares the extensions
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	tool := tools.Tools[0]
	fmt.Println("tools/list: destructive", *tool.Annotations.DestructiveHint, "effect", tool.Meta[preflight.MetaEffect], "requiresConfirmation", tool.Meta[preflight.MetaRequiresConfirmation])

	for _, action := range []string{"read", "append", "replace", "delete", "shred"} {
		err := run(ctx, cs, tool, map[string]any{"path": "notes.txt", "action": action, "content": "more\n"})
		if errors.Is(err, resolve.ErrInvalidArguments) {
			fmt.Printf("%s: invalid arguments, not called\n", action)
		}
	}
	// Output:
	// tools/list: destructive true effect delete requiresConfirmation true
	// read: confirmation false (derived): called: read notes.txt
	// append: confirmation false (derived): called: append notes.txt
	// replace: confirmation true (resolved): the user said no
	// delete: confirmation true (resolved): the user said no
	// shred: invalid arguments, not called
}

// run is the README's client snippet: resolve the call, ask the user where
// the decision says so, then make exactly the call that was resolved.
func run(ctx context.Context, cs *mcp.ClientSession, tool *mcp.Tool, args map[string]any) error {
	d, err := resolve.Preflight(ctx, cs, tool, args, nil)
	if err != nil {
		return err // errors.Is(err, resolve.ErrInvalidArguments): -32602, fix the arguments first
	}
	fmt.Printf("%s: confirmation %v (%s): ", args["action"], d.NeedsConfirmation(), d.Effective.RequiresConfirmation.Source)
	if d.NeedsConfirmation() && !confirm(d) { // ask the user
		return nil
	}
	res, err := d.Call(ctx, cs) // exactly the arguments that were resolved
	if err != nil {
		return err
	}
	fmt.Println("called:", res.Content[0].(*mcp.TextContent).Text)
	return nil
}

// confirm stands for asking the user; this one always says no.
func confirm(*resolve.Decision) bool {
	fmt.Println("the user said no")
	return false
}
