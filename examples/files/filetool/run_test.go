package filetool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRunHonoursContext: a call whose context has ended touches nothing.
func TestRunHonoursContext(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tl := &tool{root: root, maxRead: DefaultMaxRead}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, a := range []Args{
		{Path: "a.txt", Action: "read"},
		{Path: "a.txt", Action: "append", Content: "x"},
		{Path: "a.txt", Action: "replace", Content: "x"},
		{Path: "new.txt", Action: "replace", Content: "x"},
		{Path: "a.txt", Action: "delete"},
	} {
		if _, err := tl.run(ctx, a); !errors.Is(err, context.Canceled) {
			t.Errorf("%s %s after cancel: %v, want context.Canceled", a.Action, a.Path, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "keep" {
		t.Errorf("a.txt holds %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt was created: %v", err)
	}
}
