package oauthas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
)

// buildTimeout bounds the program's first build (fosite and its
// dependencies).
const buildTimeout = 10 * time.Minute

var program gobuild.Program

// Binary returns the path of the authorization server's program, building
// it into the user's cache directory the first time its sources are seen.
func Binary(t testing.TB) string {
	t.Helper()
	return program.Path(t, build)
}

// build returns the program built from the module's sources as they are,
// in the cache directory under their hash.
func build() (string, error) {
	mod, err := gobuild.Module("oauthas")
	if err != nil {
		return "", err
	}
	sum, err := sourceHash(mod)
	if err != nil {
		return "", err
	}
	return gobuild.Cached("oauthas", sum, mod, buildTimeout, "-trimpath", ".")
}

// sourceHash is a hex prefix of the SHA-256 of the module's go.mod, go.sum
// and Go files (names and contents, in name order); the module is one
// folder.
func sourceHash(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go")) {
			names = append(names, n)
		}
	}
	if !slices.Contains(names, "go.mod") {
		return "", fmt.Errorf("%s has no go.mod", dir)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// output keeps the first maxOutput bytes a process writes, and passes on
// its first line once complete.
type output struct {
	firstLine chan string // receives the first line, once

	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
}

const maxOutput = 64 << 10

func newOutput() *output { return &output{firstLine: make(chan string, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if room := maxOutput - o.buf.Len(); room > 0 {
		o.buf.Write(p[:min(len(p), room)])
	}
	if !o.sent {
		if line, _, ok := bytes.Cut(o.buf.Bytes(), []byte("\n")); ok {
			o.firstLine <- string(line)
			o.sent = true
		}
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
