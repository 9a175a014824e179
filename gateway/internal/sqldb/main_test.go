//go:build !integration

package sqldb_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// postgresSpecs is empty: PostgreSQL is tested in the integration build.
func postgresSpecs(testing.TB) map[sqldb.Dialect]string { return nil }
