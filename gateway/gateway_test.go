package gateway_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// The test binary started as a stdio upstream (see restart_test.go).
		os.Exit(runChildServer())
	}
	// Gateways built from a config file without a pins section keep
	// their pins in the user's state directory: the tests' is their own.
	dir, err := os.MkdirTemp("", "preflight-gateway-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
