//go:build integration

package sqlstore_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

// TestMain stops the PostgreSQL server and checks for leaked goroutines;
// each Redis-backed test starts its own server.
func TestMain(m *testing.M) { pgtest.Main(m) }

// postgresSpecs returns a new database on the shared PostgreSQL server,
// holding what the SQL file at script creates unless script is empty.
func postgresSpecs(t testing.TB, script string) map[string]string {
	if script == "" {
		return map[string]string{"postgres": pgtest.NewDatabase(t)}
	}
	return map[string]string{"postgres": pgtest.NewDatabaseFrom(t, script)}
}
