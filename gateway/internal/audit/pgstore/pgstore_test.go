package pgstore_test

import (
	"context"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/audit/pgstore"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func open(ctx context.Context, dsn string) (audit.Store, error) { return pgstore.Open(ctx, dsn, nil) }

func TestMain(m *testing.M) {
	storetest.Child(open)
	pgtest.Main(m)
}

func harness() storetest.Harness {
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

func TestStore(t *testing.T) { storetest.Run(t, harness()) }

// TestReadOnly: a read-only open does not migrate an empty database, and
// reads a migrated one.
func TestReadOnly(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	if _, err := pgstore.Open(t.Context(), dsn, &pgstore.Options{ReadOnly: true}); err == nil {
		t.Fatal("opened an empty database read-only")
	}
	s, err := pgstore.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := pgstore.Open(t.Context(), dsn, &pgstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, err := range ro.Query(t.Context(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkBeginFinish: a call that must be audited, begun then finished
// (two committed transactions, each flushed to the server's WAL).
func BenchmarkBeginFinish(b *testing.B) {
	s, err := pgstore.Open(b.Context(), pgtest.NewDatabase(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Bench(b, s)
}

// BenchmarkWrite128: the batched write of 128 ended calls.
func BenchmarkWrite128(b *testing.B) {
	s, err := pgstore.Open(b.Context(), pgtest.NewDatabase(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchWrite(b, s, 128)
}
