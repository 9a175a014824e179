//go:build integration

package vault_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) } // stops the server, checks for leaked goroutines

// postgresSpecs returns a new database on the shared PostgreSQL server.
func postgresSpecs(t testing.TB) map[string]string {
	return map[string]string{"postgres": pgtest.NewDatabase(t)}
}
