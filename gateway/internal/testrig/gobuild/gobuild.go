// Package gobuild builds, for tests, a Go program of a module outside the
// gateway's build list (GOWORK=off: the tracing module's Jaeger, the
// oauthas module's authorization server) once into the user's cache
// directory, under a key that names its version, so that later test runs
// (and scripts/test, up front) find it there; and finds the repository's
// folders from the test rigs.
package gobuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Cached returns ~/.cache/preflight/NAME-KEY/NAME, building it first if it
// is not there: `go build -o ... ARGS` in the module folder dir, with
// GOWORK=off, within timeout. The binary is written to a file of this
// process's own and renamed into place, since another test process may
// build it at the same time.
func Cached(name, key, dir string, timeout time.Duration, args ...string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "preflight", name+"-"+key)
	bin := filepath.Join(out, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", tmp}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building %s in %s: %v\n%s", name, dir, err, b)
	}
	return bin, os.Rename(tmp, bin)
}

// Program is a program a test process builds at most once.
type Program struct {
	once sync.Once
	path string
	err  error
}

// Path returns the program's path, built by build on first use; a failure
// fails t.
func (p *Program) Path(t testing.TB, build func() (string, error)) string {
	t.Helper()
	p.once.Do(func() { p.path, p.err = build() })
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.path
}

// Root returns the repository's root, found from this file's place in it.
func Root() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("gobuild: cannot locate the repository")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "gateway", "go.mod")); err != nil {
		return "", fmt.Errorf("gobuild: the repository: %w", err)
	}
	return filepath.Clean(root), nil
}

// Module returns the folder of the repository's module name (tracing,
// oauthas, release), checking it holds a go.mod.
func Module(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the %s module: %w", name, err)
	}
	return dir, nil
}
