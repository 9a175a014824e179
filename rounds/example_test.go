package rounds_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/rounds"
)

// A client whose elicitation handler confirms delete_folder's question.
// Under 2026-07-28 the server answers the first tools/call with
// input_required; the client asks the handler and retries, and CallTool
// returns the final result.
func ExampleNewClient() {
	// A folders server on a temporary tree, over loopback HTTP.
	dir, err := os.MkdirTemp("", "rounds-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(dir, "old", "logs"), 0o755); err != nil {
		log.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	hs := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, nil), nil))
	defer hs.Close()

	client := rounds.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, &mcp.ClientOptions{
		// The same handler answers legacy elicitation/create requests.
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			key, _ := rounds.InputKey(ctx)
			fmt.Printf("asked %s: %s\n", key, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"delete": true}}, nil
		},
	}, &rounds.Options{MaxRounds: 5})

	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "old"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// asked confirm_delete: Delete old and the 1 entries in it (logs/)?
	// deleted: old
}
