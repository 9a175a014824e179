//go:build !integration

package sqlstore_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	storetest.Child(open)
	goleak.VerifyTestMain(m)
}

// postgresSpecs is empty: PostgreSQL is tested in the integration build.
func postgresSpecs(testing.TB, string) map[string]string { return nil }
