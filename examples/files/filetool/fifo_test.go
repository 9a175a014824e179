//go:build unix

package filetool_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/examples/files/filetool"
)

// TestNamedPipeIsRefused: a named pipe in the root is refused by every
// action, at once, and left in place. A plain open of a pipe with no
// writer blocks for ever (and pins an OS thread); the call must return.
func TestNamedPipeIsRefused(t *testing.T) {
	cs, dir := session(t)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Should a call block in open, opening the other end releases it, so
	// that the test fails instead of hanging and leaking.
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
	for _, action := range filetool.Actions {
		// A generous bound: only a call that blocks reaches it.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: filetool.Name, Arguments: map[string]any{"path": "pipe", "action": action, "content": "x"}})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || text != "pipe: a named pipe, not a regular file: manage_files works on regular files only" {
			t.Errorf("%s: %q (isError %v), want a refusal naming the pipe", action, text, res.IsError)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("after %s the pipe is gone or changed: %v %v", action, fi, err)
		}
	}
}
