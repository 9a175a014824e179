//go:build unix && !aix && (!solaris || illumos)

package npmdeps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeNPM puts on PATH an npm that appends its arguments to the file it
// returns and then runs script (sh) in its working directory.
func fakeNPM(t *testing.T, script string) (log string) {
	t.Helper()
	bin := t.TempDir()
	log = filepath.Join(bin, "npm.log")
	npm := "#!/bin/sh\necho \"$@\" >> '" + log + "'\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(npm), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func runs(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestEnsureRunsNPMCI(t *testing.T) {
	dir := fakeProject(t)
	install(t, dir, "node_modules/a", "0.9.0")
	log := fakeNPM(t, `printf '{"version":"1.0.0"}' > node_modules/a/package.json`)
	EnsureT(t, dir)
	if got := runs(t, log); len(got) != 1 || got[0] != "ci --no-audit --no-fund" {
		t.Fatalf("npm ran with %q, want once with ci --no-audit --no-fund", got)
	}
	// Once per directory: a broken node_modules is not looked at again.
	install(t, dir, "node_modules/a", "0.9.0")
	EnsureT(t, filepath.Join(dir, ".")) // the same directory
	if got := runs(t, log); len(got) != 1 {
		t.Errorf("npm ran %d times, want once", len(got))
	}
	// Ensure itself is not memoised.
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if got := runs(t, log); len(got) != 2 {
		t.Errorf("npm ran %d times, want twice", len(got))
	}
}

func TestEnsureNPMFails(t *testing.T) {
	dir := fakeProject(t)
	install(t, dir, "node_modules/a", "0.9.0")
	fakeNPM(t, "echo 'npm error: registry unreachable' >&2; exit 1")
	err := Ensure(dir)
	if err == nil || !strings.Contains(err.Error(), "registry unreachable") || !strings.Contains(err.Error(), "a is 0.9.0, want 1.0.0") {
		t.Errorf("Ensure = %v, want npm's output and why", err)
	}
}

func TestEnsureStillMismatched(t *testing.T) {
	dir := fakeProject(t)
	install(t, dir, "node_modules/a", "0.9.0")
	fakeNPM(t, "echo 'added 0 packages'")
	err := Ensure(dir)
	if err == nil || !strings.Contains(err.Error(), "after npm ci") || !strings.Contains(err.Error(), "added 0 packages") {
		t.Errorf("Ensure = %v, want after npm ci, with npm's output", err)
	}
}

// TestLockDir checks that the lock excludes a second holder (flock locks
// belong to open files, so two in one process exclude each other).
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		unlock2, err := lockDir(dir)
		if err != nil {
			t.Error(err)
		}
		got <- unlock2
	}()
	select {
	case <-got:
		t.Fatal("second lock taken while the first is held")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case unlock2 := <-got:
		if unlock2 != nil {
			unlock2()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second lock not taken after the first was released")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("lock left %d files in the directory", len(entries))
	}
}
