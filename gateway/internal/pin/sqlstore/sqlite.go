package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/pin"
	_ "modernc.org/sqlite" // the pure Go SQLite driver, "sqlite"
)

// SQLite is a pin.Store in an SQLite file. Several processes on one
// machine may open the same file: the gateway and the preflight pins
// command do.
type SQLite struct {
	db *sql.DB
	e  engine
}

// OpenSQLite opens (creating if needed) the SQLite file at path, in WAL
// mode, waiting up to 5 s for a lock another process holds.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("sqlstore: sqlite: no file")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate") // a writing transaction takes the lock first, so two never deadlock
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	for _, q := range []string{createTable, createServers} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlstore: sqlite %s: %w", path, err)
		}
	}
	s := &SQLite{db: db}
	s.e = engine{
		begin: func(ctx context.Context) (tx, error) {
			t, err := db.BeginTx(ctx, nil)
			if err != nil {
				return nil, err
			}
			return sqlTx{t}, nil
		},
		queryRow: func(ctx context.Context, query string, args ...any) scanner {
			return sqlRow{db.QueryRowContext(ctx, query, args...)}
		},
		query: func(ctx context.Context, query string, args ...any) (rows, error) {
			rs, err := db.QueryContext(ctx, query, args...)
			if err != nil {
				return nil, err
			}
			return sqlRows{rs}, nil
		},
		rebind: func(q string) string { return q },
	}
	return s, nil
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// Get implements pin.Store.
func (s *SQLite) Get(ctx context.Context, server, tool string) (*pin.Record, error) {
	return s.e.get(ctx, server, tool)
}

// List implements pin.Store.
func (s *SQLite) List(ctx context.Context, server string) ([]*pin.Record, error) {
	return s.e.list(ctx, server)
}

// Pin implements pin.Store.
func (s *SQLite) Pin(ctx context.Context, server string, def *pin.Definition, at time.Time) (*pin.Record, error) {
	return s.e.pin(ctx, server, def, at)
}

// Quarantine implements pin.Store.
func (s *SQLite) Quarantine(ctx context.Context, server, tool, pinned string, state pin.State, pending *pin.Definition, at time.Time) (*pin.Record, error) {
	return s.e.quarantine(ctx, server, tool, pinned, state, pending, at)
}

// Approve implements pin.Store.
func (s *SQLite) Approve(ctx context.Context, server, tool, fingerprint, approver string, at time.Time) (*pin.Record, error) {
	return s.e.approve(ctx, server, tool, fingerprint, approver, at)
}

// Listed implements pin.Store.
func (s *SQLite) Listed(ctx context.Context, server string, at time.Time) (bool, error) {
	return s.e.listed(ctx, server, at)
}

type sqlTx struct{ t *sql.Tx }

func (t sqlTx) QueryRow(ctx context.Context, query string, args ...any) scanner {
	return sqlRow{t.t.QueryRowContext(ctx, query, args...)}
}

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.t.ExecContext(ctx, query, args...)
	return err
}

func (t sqlTx) Commit(context.Context) error   { return t.t.Commit() }
func (t sqlTx) Rollback(context.Context) error { return t.t.Rollback() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	if err := r.r.Scan(dest...); errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	} else {
		return err
	}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
