package gateway_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// The test binary started as a stdio upstream (see restart_test.go).
		os.Exit(runChildServer())
	}
	// A configuration without audit.path audits to the user's state
	// directory: the tests' is a temporary one.
	state, err := os.MkdirTemp("", "preflight-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(state) }))
}
