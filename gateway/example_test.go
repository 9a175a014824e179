package gateway_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway"
)

// A gateway in front of one in-process server; a real setup names stdio
// commands (Command, Args) or HTTP endpoints (URL) instead of Connect, and
// serves with g.Serve(ctx, listener).
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "files")
	defer os.RemoveAll(dir)
	root, _ := os.OpenRoot(dir)
	defer root.Close()

	g, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{{
		Name: "files",
		Connect: func(ctx context.Context) (mcp.Transport, error) {
			client, server := mcp.NewInMemoryTransports()
			_, err := filetool.NewServer(root, nil).Connect(ctx, server, nil)
			return client, err
		},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	g.Start()
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	h := g.Health()
	for _, u := range h.Upstreams {
		fmt.Println(u.Name, u.State, u.Era, u.Tools)
	}
	for _, t := range g.View().Tools {
		fmt.Println(t.Exposed)
	}
	// Output:
	// files up 2026-07-28 1
	// manage_files
}
