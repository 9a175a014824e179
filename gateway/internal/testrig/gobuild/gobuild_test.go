package gobuild_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
)

// TestRoot: the root holds the gateway module and this package.
func TestRoot(t *testing.T) {
	t.Parallel()
	root, err := gobuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "gateway", "internal", "testrig", "gobuild"); want != wd {
		t.Errorf("root %s: this package would be %s, is %s", root, want, wd)
	}
	if !filepath.IsAbs(root) {
		t.Errorf("root %s not absolute", root)
	}
}

func TestModule(t *testing.T) {
	t.Parallel()
	root, err := gobuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := gobuild.Module("gateway")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "gateway"); dir != want {
		t.Errorf("gateway module at %s, want %s", dir, want)
	}
	// internal holds no go.mod: a folder that is no module is refused.
	for _, name := range []string{"no-such-module", filepath.Join("gateway", "internal")} {
		if dir, err := gobuild.Module(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Module(%q) = %q, %v; want an error that it does not exist", name, dir, err)
		}
	}
}
