package gateway_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
)

// TestSSEUpstream puts the gateway in front of a server on the older
// HTTP+SSE transport: its tools are listed and called, and its question
// (a request in the middle of the call) reaches clients of both eras.
func TestSSEUpstream(t *testing.T) {
	t.Parallel()
	dir, root := foldersRoot(t)
	s := foldertool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	url := serveHTTP(t, h)
	g, gwURL := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "folders", Transport: "sse", URL: url}}})
	if h := g.Health().Upstreams[0]; h.Transport != "sse" || h.State != "up" {
		t.Fatalf("health: %+v", h)
	}
	for _, era := range []string{modern, legacy} {
		if err := os.MkdirAll(filepath.Join(dir, "full", era), 0o755); err != nil {
			t.Fatal(err)
		}
		a := &answers{}
		cs := connect(t, gwURL, era, a, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "full"}})
		if err != nil || contentText(t, res) != "deleted: full" || len(a.messages()) != 1 {
			t.Errorf("%s: delete_folder through an SSE upstream: %v %v, asked %q", era, res, err, a.messages())
		}
	}
}
