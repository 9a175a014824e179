package endpoint_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
)

// ExampleNewHandler serves one MCP server to a 2026-07-28 client and to a
// client pinned to the legacy 2025-11-25 handshake.
func ExampleNewHandler() {
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1.0.0"}, nil)
	type args struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Say hello."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})

	ts := httptest.NewServer(endpoint.NewHandler(server, nil))
	defer ts.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil)
	for _, version := range []string{"", "2025-11-25"} { // "" means the newest
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			log.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: args{Name: "gopher"}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s session %t: %s\n", cs.InitializeResult().ProtocolVersion, cs.ID() != "", res.Content[0].(*mcp.TextContent).Text)
		cs.Close()
	}
	// Output:
	// 2026-07-28 session false: hello, gopher
	// 2025-11-25 session true: hello, gopher
}
