//go:build integration

package clientconf_test

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/conformance"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/servebench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestClientConformance runs the conformance suite's client leg against
// the gateway's upstream side: for each scenario, cmd/confclient starts
// the preflight binary in front of the suite's test server and plays the
// scenario's client through it.
func TestClientConformance(t *testing.T) {
	dir := t.TempDir()
	preflight, err := servebench.Build(dir, "./cmd/preflight", "preflight")
	if err != nil {
		t.Fatal(err)
	}
	client, err := servebench.Build(dir, "./internal/testrig/clientconf/cmd/confclient", "confclient")
	if err != nil {
		t.Fatal(err)
	}
	conformance.RunClient(t, []string{client, "-preflight", filepath.Clean(preflight)})
}
