package filetool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func session(t *testing.T) (*mcp.ClientSession, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := filetool.NewServer(root, nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, dir
}

func call(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: filetool.Name, Arguments: args})
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestActions(t *testing.T) {
	cs, dir := session(t)
	steps := []struct {
		args    map[string]any
		text    string
		isError bool
		file    string // the file's content afterwards; "-" for absent
	}{
		{map[string]any{"path": "n.txt", "action": "read"}, "n.txt: no such file", true, "-"},
		{map[string]any{"path": "n.txt", "action": "append", "content": "a"}, "appended 1 bytes: n.txt", false, "a"},
		{map[string]any{"path": "n.txt", "action": "append", "content": "b"}, "appended 1 bytes: n.txt", false, "ab"},
		{map[string]any{"path": "n.txt", "action": "read"}, "ab", false, "ab"},
		{map[string]any{"path": "n.txt", "action": "replace", "content": "c"}, "replaced 1 bytes: n.txt", false, "c"},
		{map[string]any{"path": "n.txt", "action": "replace"}, "content is required for replace", true, "c"},
		{map[string]any{"path": "n.txt", "action": "delete"}, "deleted: n.txt", false, "-"},
		{map[string]any{"path": "n.txt", "action": "delete"}, "already absent: n.txt", false, "-"},
	}
	for i, s := range steps {
		text, isErr := call(t, cs, s.args)
		if text != s.text || isErr != s.isError {
			t.Errorf("step %d %v: %q (isError %v), want %q (%v)", i, s.args, text, isErr, s.text, s.isError)
		}
		b, err := os.ReadFile(filepath.Join(dir, "n.txt"))
		got := string(b)
		if err != nil {
			got = "-"
		}
		if got != s.file {
			t.Errorf("step %d: file holds %q, want %q", i, got, s.file)
		}
	}
}

func TestPathsOutsideRootAreRefused(t *testing.T) {
	cs, dir := session(t)
	outside := filepath.Join(filepath.Dir(dir), "outside.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../outside.txt", outside, "link", "sub/../../outside.txt"} {
		for _, action := range filetool.Actions {
			if p == "link" && action == "delete" {
				continue // removes the link inside the root, not its target
			}
			text, isErr := call(t, cs, map[string]any{"path": p, "action": action, "content": "x"})
			if !isErr || strings.Contains(text, "secret") {
				t.Errorf("%s %s: %q (isError %v), want a refusal", action, p, text, isErr)
			}
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("the file outside the root was changed: %q", b)
	}
}

func TestStaticIsTheWorstCase(t *testing.T) {
	s := filetool.Table.Static()
	want := preflight.Annotations{DestructiveHint: true}
	if s.Annotations != want {
		t.Errorf("static annotations %+v, want seed 000's %+v", s.Annotations, want)
	}
	if s.Hints.Effect != "delete" || !*s.Hints.RequiresConfirmation || *s.Hints.Idempotent {
		t.Errorf("static hints %+v", s.Hints)
	}
}
