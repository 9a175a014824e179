//go:build integration

package sqlstore_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) } // stops the server, checks for leaked goroutines

// postgresSpecs returns a new database on the shared PostgreSQL server,
// holding what the SQL file at script creates unless script is empty.
func postgresSpecs(t testing.TB, script string) map[string]string {
	if script == "" {
		return map[string]string{"postgres": pgtest.NewDatabase(t)}
	}
	return map[string]string{"postgres": pgtest.NewDatabaseFrom(t, script)}
}
