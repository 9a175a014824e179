package inject_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/inject"
)

// ConfirmDelete is the form the user fills in.
type ConfirmDelete struct {
	Delete bool `json:"delete" jsonschema:"delete the folder and everything in it"`
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// folderServer is the README's server: delete_folder asks the user before
// it deletes, through a resolver that runs before the tool body.
func folderServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "folders", Version: "v1"}, nil)

	confirm := inject.NewResolver("confirm_delete", func(ctx context.Context, in struct {
		Path string `arg:"path"` // a tool argument, by name
	}) (inject.Elicited[ConfirmDelete], error) {
		return inject.Elicit[ConfirmDelete](ctx, "Delete "+in.Path+"?")
	})

	inject.AddTool(server, inject.NewInjector(nil), &mcp.Tool{Name: "delete_folder"},
		func(ctx context.Context, req *inject.Request, in struct {
			Path    string                         `json:"path"`
			Confirm inject.Elicited[ConfirmDelete] `json:"-" inject:"confirm_delete"` // not in inputSchema
		}) (*mcp.CallToolResult, error) {
			if !in.Confirm.Accepted() || !in.Confirm.Data.Delete {
				return textResult("nothing deleted"), nil
			}
			return textResult("deleted " + in.Path), nil // a real tool deletes the folder here
		}, confirm)
	return server
}

// The README's delete_folder: the resolver asks the user a question (a
// form) before the tool body runs, and the body sees the answer. The
// client's user says yes, then no.
func ExampleAddTool() {
	ctx := context.Background()
	answers := []bool{true, false}
	client := mcp.NewClient(&mcp.Implementation{Name: "app", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			yes := answers[0]
			answers = answers[1:]
			fmt.Printf("asked %q, answered %v\n", req.Params.Message, yes)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"delete": yes}}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := folderServer().Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "reports"}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// asked "Delete reports?", answered true
	// deleted reports
	// asked "Delete reports?", answered false
	// nothing deleted
}
