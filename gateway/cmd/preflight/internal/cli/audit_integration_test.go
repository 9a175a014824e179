//go:build integration

package cli

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

// TestAuditPostgres asks the PostgreSQL store TestAudit's queries: the
// output is the same as SQLite's.
func TestAuditPostgres(t *testing.T) {
	spec := pgtest.Start(t).DSN()
	fillAudit(t, spec)
	checkAudit(t, spec)
}
