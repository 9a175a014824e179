//go:build integration

package local

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(standInEnv) != "" {
		os.Exit(standIn(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
