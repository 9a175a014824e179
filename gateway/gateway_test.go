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
	goleak.VerifyTestMain(m)
}
