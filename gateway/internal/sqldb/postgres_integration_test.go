//go:build integration

package sqldb_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

// TestMigrateTogether: replicas starting together against one PostgreSQL
// database migrate once, one at a time.
func TestMigrateTogether(t *testing.T) {
	t.Parallel()
	spec := pgtest.NewDatabase(t)
	fs := migrations("a", 2)
	// A slow migration keeps the others waiting for the lock, or racing
	// to apply it again without one.
	fs["003_slow.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nSELECT pg_sleep(0.5);\nCREATE TABLE a3 (id INTEGER);\n")}
	s := sqldb.Schema{Migrations: fs, Table: "goose_a"}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		db := open(t, spec, nil)
		wg.Go(func() { errs[i] = db.Migrate(context.Background(), s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	db := open(t, spec, nil)
	if n := count(t, db, "SELECT count(*) FROM goose_a WHERE version_id > 0"); n != 3 {
		t.Errorf("goose_a has %d versions, want 3", n)
	}
}

// TestPoolMaxConns: a URL's pool_max_conns bounds the pool and is not sent
// to the server.
func TestPoolMaxConns(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db := open(t, dsn+sep+"pool_max_conns=3", nil)
	if err := db.Read.PingContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := db.Read.Stats().MaxOpenConnections; n != 3 {
		t.Errorf("MaxOpenConnections = %d, want 3", n)
	}
}
