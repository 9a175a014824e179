package storetest

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the audit store suite")

// Golden compares got with testdata/name of this package, or rewrites it
// with -update.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path for the golden files")
	}
	path := filepath.Join(filepath.Dir(file), "testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
