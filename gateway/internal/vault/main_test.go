//go:build !integration

package vault_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// postgresSpecs is empty: PostgreSQL is tested in the integration build.
func postgresSpecs(testing.TB) map[string]string { return nil }
