//go:build integration

package sqlstore_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestPostgres(t *testing.T) {
	t.Parallel()
	storetest.Run(t, postgresHarness())
}

func postgresHarness() storetest.Harness {
	return storetest.Harness{
		New:  func(t *testing.T) string { return pgtest.NewDatabase(t) },
		Open: open,
		// A server of the test's own, stopped and restarted.
		Interruptible: func(t *testing.T) (string, func(), func()) {
			s := pgtest.Start(t)
			return s.DSN(), func() { s.Stop(t) }, func() { s.Restart(t) }
		},
	}
}
