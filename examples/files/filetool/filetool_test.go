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
	"github.com/preflightmcp/preflight/resolve"
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
	return connect(t, filetool.NewServer(root, nil)), dir
}

// connect connects a client to s in memory.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
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

// TestDirectoryIsRefused: a directory is not a file to read, write or
// delete.
func TestDirectoryIsRefused(t *testing.T) {
	cs, dir := session(t)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, action := range filetool.Actions {
		text, isErr := call(t, cs, map[string]any{"path": "d", "action": action, "content": "x"})
		if !isErr || text != "d: a directory, not a file: manage_files works on regular files only" {
			t.Errorf("%s: %q (isError %v)", action, text, isErr)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "d")); err != nil || !fi.IsDir() {
		t.Errorf("the directory was changed: %v %v", fi, err)
	}
}

// TestReadIsBounded: a file over the read limit is refused with a message
// that says so, never silently cut; a file at the limit is read whole.
func TestReadIsBounded(t *testing.T) {
	cs, dir := session(t)
	big := strings.Repeat("a", filetool.DefaultMaxRead+1)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr := call(t, cs, map[string]any{"path": "big.txt", "action": "read"})
	if want := "big.txt: the file is larger than 1048576 bytes, the most a read returns"; !isErr || text != want {
		t.Errorf("read of %d bytes: %.80q (isError %v), want %q", len(big), text, isErr, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, map[string]any{"path": "big.txt", "action": "read"}); isErr || text != big[1:] {
		t.Errorf("read of exactly the limit: %d bytes (isError %v), want %d", len(text), isErr, len(big)-1)
	}

	// A configured limit.
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v0"}, nil)
	filetool.AddWith(resolve.NewServer(s, nil), root, &filetool.Options{MaxRead: 4})
	cs2 := connect(t, s)
	if err := os.WriteFile(filepath.Join(dir, "five.txt"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs2, map[string]any{"path": "five.txt", "action": "read"}); !isErr || !strings.Contains(text, "larger than 4 bytes") {
		t.Errorf("read over a limit of 4: %q (isError %v)", text, isErr)
	}
}
