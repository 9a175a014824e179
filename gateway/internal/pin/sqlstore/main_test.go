//go:build !integration

package sqlstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// postgresSpecs is empty: PostgreSQL is tested in the integration build.
func postgresSpecs(testing.TB, string) map[string]string { return nil }
