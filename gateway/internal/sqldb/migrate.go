package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// Schema is a store's schema: its migrations and where their versions are
// recorded.
type Schema struct {
	// Migrations holds the store's goose SQL files (NNN_name.sql, each
	// with a "-- +goose Up" section) for this database's dialect.
	Migrations fs.FS
	// Table records the versions applied, one table per store (such as
	// goose_audit), so that stores share a database.
	Table string
	// Legacy, if set, is a table of versions (an integer column version)
	// the store kept before Table: the first time, its versions are
	// recorded in Table and not applied again.
	Legacy string
}

// NewerError reports a database whose schema is newer than this program
// knows.
type NewerError struct {
	Table      string
	Have, Know int64
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the schema has version %d, newer than this program's %d: upgrade preflight", e.Have, e.Know)
}

// Migrate brings the schema up to date: it applies each migration the
// database lacks in a transaction of its own with its version. On
// PostgreSQL, processes that start together migrate one at a time under
// an advisory lock. A database opened ReadOnly is only checked: its schema
// must be current.
func (db *DB) Migrate(ctx context.Context, s Schema) error {
	if err := db.migrate(ctx, s); err != nil {
		return fmt.Errorf("%s: %s: %w", db, s.Table, err)
	}
	return nil
}

func (db *DB) migrate(ctx context.Context, s Schema) error {
	dialect := database.DialectPostgres
	if db.Dialect == SQLite {
		dialect = database.DialectSQLite3
	}
	store, err := database.NewStore(dialect, s.Table)
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithStore(store), goose.WithDisableGlobalRegistry(true)}
	if db.Dialect == Postgres {
		// Poll the lock every second for up to five minutes.
		l, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(l))
	}
	p, err := goose.NewProvider("", db.Write, s.Migrations, opts...)
	if err != nil {
		return err
	}
	sources := p.ListSources()
	if len(sources) == 0 {
		return errors.New("no migrations")
	}
	know := sources[len(sources)-1].Version
	have, legacy, err := db.version(ctx, store, s.Legacy)
	if err != nil {
		return err
	}
	switch {
	case have > know:
		return &NewerError{Table: s.Table, Have: have, Know: know}
	case db.readOnly && have < know:
		return fmt.Errorf("the schema has version %d, older than %d: open it once read-write (preflight serve) to migrate it", have, know)
	case db.readOnly:
		return nil
	}
	if legacy {
		if err := db.adopt(ctx, store, s.Legacy); err != nil {
			return err
		}
	}
	for have < know {
		_, err := p.Up(ctx)
		if err == nil {
			return nil
		}
		// Another process may have applied the same migration meanwhile
		// (SQLite has no lock to hold across them): go on from where it
		// is, as long as it progresses.
		now, _, verr := db.version(ctx, store, "")
		if verr != nil || now <= have {
			return err
		}
		have = now
	}
	return nil
}

// version returns the schema's version: in the store's table, else in the
// legacy one (fromLegacy), else 0.
func (db *DB) version(ctx context.Context, store database.Store, legacy string) (v int64, fromLegacy bool, err error) {
	ok, err := db.tableExists(ctx, db.Read, store.Tablename())
	if err != nil {
		return 0, false, err
	}
	if ok {
		v, err := store.GetLatestVersion(ctx, db.Read)
		if errors.Is(err, database.ErrVersionNotFound) {
			return 0, false, nil
		}
		return v, false, err
	}
	if legacy == "" {
		return 0, false, nil
	}
	if ok, err := db.tableExists(ctx, db.Read, legacy); err != nil || !ok {
		return 0, false, err
	}
	var n sql.NullInt64
	err = db.Read.QueryRowContext(ctx, "SELECT max(version) FROM "+legacy).Scan(&n)
	return n.Int64, true, err
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tableExists reports whether the table exists (in the schema of the
// search path for PostgreSQL).
func (db *DB) tableExists(ctx context.Context, q querier, table string) (bool, error) {
	query := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	if db.Dialect == Postgres {
		query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1"
	}
	var n int
	err := q.QueryRowContext(ctx, query, table).Scan(&n)
	return n > 0, err
}

// adopt records in the store's version table the versions of the legacy
// one, unless the store's table exists: one transaction, under the lock
// the migrations take on PostgreSQL.
func (db *DB) adopt(ctx context.Context, store database.Store, legacy string) error {
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", lock.DefaultLockID); err != nil {
			return err
		}
	}
	if ok, err := db.tableExists(ctx, tx, store.Tablename()); err != nil || ok {
		return err
	}
	if ok, err := db.tableExists(ctx, tx, legacy); err != nil || !ok {
		return err // no legacy table: a new database
	}
	rows, err := tx.QueryContext(ctx, "SELECT version FROM "+legacy+" ORDER BY version")
	if err != nil {
		return err
	}
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		versions = append(versions, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := store.CreateVersionTable(ctx, tx); err != nil {
		return err
	}
	for _, v := range append([]int64{0}, versions...) {
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return err
		}
	}
	return tx.Commit()
}
