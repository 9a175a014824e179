package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlitestore"
)

// open opens a store with the default busy timeout (5s): a write that
// waits for another writer of the file ends at its context's deadline.
func open(ctx context.Context, path string) (audit.Store, error) {
	return sqlitestore.Open(ctx, path, nil)
}

func TestMain(m *testing.M) {
	storetest.Child(open)
	goleak.VerifyTestMain(m)
}

func harness() storetest.Harness {
	return storetest.Harness{
		New:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.db") },
		Open: open,
		// Another process holding the file's write lock: writers wait
		// for it, then fail.
		Interruptible: func(t *testing.T) (string, func(), func()) {
			path := filepath.Join(t.TempDir(), "audit.db")
			var db *sql.DB
			var conn *sql.Conn
			stop := func() {
				var err error
				if db, err = sql.Open("sqlite", path); err != nil {
					t.Fatal(err)
				}
				if conn, err = db.Conn(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
					t.Fatal(err)
				}
			}
			start := func() {
				if conn == nil {
					return
				}
				if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
					t.Fatal(err)
				}
				conn.Close()
				db.Close()
				conn, db = nil, nil
			}
			t.Cleanup(start) // if the test stopped before starting again
			return path, stop, start
		},
	}
}

func TestStore(t *testing.T) { storetest.Run(t, harness()) }

// TestReadOnly: a read-only open neither creates a missing file nor
// migrates one, and reads a migrated one.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := sqlitestore.Open(t.Context(), missing, &sqlitestore.Options{ReadOnly: true}); err == nil {
		t.Fatal("opened a missing file read-only")
	}
	if _, err := sqlitestore.Open(t.Context(), missing, &sqlitestore.Options{ReadOnly: true}); err == nil {
		t.Fatal("a read-only open created the file")
	}
	path := filepath.Join(dir, "audit.db")
	s, err := sqlitestore.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := sqlitestore.Open(t.Context(), path, &sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, err := range ro.Query(t.Context(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "a.db?mode=memory", "file:a.db"} {
		if _, err := sqlitestore.Open(t.Context(), bad, nil); err == nil {
			t.Errorf("opened %q", bad)
		}
	}
}

// BenchmarkBeginFinish: a call that must be audited, begun then finished
// (two fsynced commits).
func BenchmarkBeginFinish(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "audit.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Bench(b, s)
}

// BenchmarkWrite128: the batched write of 128 ended calls.
func BenchmarkWrite128(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "audit.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchWrite(b, s, 128)
}
