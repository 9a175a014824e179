package filetool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/examples/files/filetool"
)

// TestDisclosingServer: with progressive disclosure, manage_files is
// listed minimally with its resolution markers, a call is refused until
// its description is fetched on that connection, and then works; another
// connection is still refused.
func TestDisclosingServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "n.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	server, _ := filetool.NewDisclosingServer(root, nil, nil)
	ctx := context.Background()
	connect := func() *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{preflight.ExtensionToolResolution: map[string]any{}}},
		}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := connect(), connect()

	list, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := list.Tools[0]
	schema, _ := json.Marshal(tl.InputSchema)
	if tl.Description != "Read, append, replace, or delete file contents" || string(schema) != `{"type":"object"}` {
		t.Errorf("listed %q %s", tl.Description, schema)
	}
	// The minimal listing leaves destructiveHint out: true is the default.
	if !preflight.IsResolvable(tl) || !preflight.AnnotationsOf(tl.Annotations).DestructiveHint {
		t.Errorf("resolution marker or worst case lost: %+v", tl)
	}

	read := &mcp.CallToolParams{Name: filetool.Name, Arguments: map[string]any{"path": "n.txt", "action": "read"}}
	res, err := a.CallTool(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := disclose.ResultError(res); !ok || e.Code != disclose.CodeToolDescriptionRequired || e.ResourceURI != "resource:///tool_descriptions?tools=manage_files" {
		t.Fatalf("before fetch: %+v %v", e, ok)
	}
	m, err := disclose.Fetch(ctx, a, "", filetool.Name)
	if err != nil {
		t.Fatal(err)
	}
	var full struct {
		InputSchema struct {
			Properties map[string]any `json:"properties"`
		} `json:"inputSchema"`
		Examples []any `json:"examples"`
	}
	if err := json.Unmarshal(m[filetool.Name], &full); err != nil || len(full.InputSchema.Properties) != 3 || len(full.Examples) != 4 {
		t.Errorf("full description %s: %v", m[filetool.Name], err)
	}
	res, err = a.CallTool(ctx, read)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello" {
		t.Fatalf("after fetch: %v %+v", err, res)
	}
	res, err = b.CallTool(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := disclose.ResultError(res); !ok {
		t.Errorf("another connection was not refused: %+v", res)
	}
}
