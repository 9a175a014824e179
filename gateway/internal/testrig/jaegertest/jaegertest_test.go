package jaegertest

import (
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
)

// TestPinned reads the tracing module's pin of Jaeger: a v1.x version of
// the module, the tags that ship the v2 binary.
func TestPinned(t *testing.T) {
	dir, err := gobuild.Module("tracing")
	if err != nil {
		t.Fatal(err)
	}
	v, err := pinned(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "v1.") {
		t.Errorf("pinned %q, want a v1.x version", v)
	}
	if _, err := pinned(t.TempDir()); err == nil {
		t.Error("a folder without go.mod gave a version")
	}
}
