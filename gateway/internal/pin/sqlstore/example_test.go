package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
)

// A gateway keeps its pins in an SQLite file by default; the same file,
// opened again (by a restarted gateway, or by preflight pins), holds them.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "pins")
	defer os.RemoveAll(dir)
	spec := "sqlite:" + filepath.Join(dir, "pins.db") // or postgres://USER@HOST/DATABASE

	store, err := sqlstore.Open(ctx, spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := pin.New(store, nil)
	tool := &mcp.Tool{Name: "read_file", Description: "Read a file.", InputSchema: map[string]any{"type": "object"}}
	if _, err := p.Check(ctx, "files", []*mcp.Tool{tool}); err != nil {
		fmt.Println(err)
	}
	store.Close()

	store, _ = sqlstore.Open(ctx, spec)
	defer store.Close()
	recs, _ := store.List(ctx, "")
	for _, r := range recs {
		fmt.Println(r.Server, r.Tool, r.State)
	}
	// Output:
	// files read_file pinned
}
