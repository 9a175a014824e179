package oauthas

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSourceHash: the program's cache key changes with its sources.
func TestSourceHash(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sourceHash(dir); err == nil {
		t.Error("a folder without go.mod has a hash")
	}
	write("go.mod", "module m\n")
	write("main.go", "package main\n")
	h1, err := sourceHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("README", "not a source")
	if h, _ := sourceHash(dir); h != h1 {
		t.Error("a file that is not a source changed the hash")
	}
	write("main.go", "package main\n\nfunc main() {}\n")
	if h, _ := sourceHash(dir); h == h1 {
		t.Error("a changed source kept the hash")
	}
}
