//go:build integration

package sqldb_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// postgresSpecs returns a new database on the shared PostgreSQL server.
func postgresSpecs(t testing.TB) map[sqldb.Dialect]string {
	return map[sqldb.Dialect]string{sqldb.Postgres: pgtest.NewDatabase(t)}
}
