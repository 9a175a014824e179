// Package sqlitestore keeps audit records in an SQLite file (pure Go, no
// cgo): the gateway's embedded default. The file is in WAL mode with
// synchronous=FULL, so a record is on disk when a write returns; several
// processes may share the file, one writing at a time. The schema is
// embedded and migrated when the store opens.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/sqlq"
	"github.com/preflightmcp/preflight/hints"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options configure a Store; nil means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another writer of the
	// file (another process) before failing, unless its context ends
	// first. Zero means 5s.
	BusyTimeout time.Duration
	// ReadOnly opens an existing store to query it: the file must exist
	// and its schema be current; nothing is created or migrated.
	ReadOnly bool
}

// Store is an audit.Store in an SQLite file.
type Store struct {
	w *sql.DB // one connection: writes are serialised in the process
	r *sql.DB // queries
}

var _ audit.Store = (*Store)(nil)

// Open opens (creating it if needed) the store in the file at path and
// migrates its schema.
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if path == "" || strings.Contains(path, "?") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite audit store %q: want a file path without ?", path)
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("sqlite audit store: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	r, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	r.SetMaxOpenConns(4)
	q.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		r.Close()
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, r: r}
	if err := s.wal(ctx, opts.BusyTimeout); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite audit store %s: %w", path, err)
	}
	if err := s.migrate(ctx, opts.ReadOnly); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite audit store %s: %w", path, err)
	}
	return s, nil
}

// wal puts the file in WAL mode (it stays so). SQLite answers a
// connection switching the mode while another one opens the file with
// SQLITE_BUSY at once, without waiting: wal tries again until busy.
func (s *Store) wal(ctx context.Context, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for {
		var mode string
		err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("journal mode %s: WAL is not available for this file", mode)
		case !isBusy(err) || time.Now().After(deadline):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// isBusy reports SQLITE_BUSY (the file is locked by another connection).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// migrate applies the migrations the file lacks, in one transaction.
func (s *Store) migrate(ctx context.Context, readOnly bool) error {
	ms, err := sqlq.Migrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if readOnly {
		var v int
		if err := s.r.QueryRowContext(ctx, "SELECT max(version) FROM audit_migrations").Scan(&v); err != nil {
			return fmt.Errorf("not an audit store: %w", err)
		}
		if v != len(ms) {
			if v > len(ms) {
				return &sqlq.NewerError{Have: v, Know: len(ms)}
			}
			return fmt.Errorf("the audit database has schema version %d, older than %d: open it once read-write (preflight serve) to migrate it", v, len(ms))
		}
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS audit_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM audit_migrations").Scan(&have); err != nil {
		return err
	}
	if have > len(ms) {
		return &sqlq.NewerError{Have: have, Know: len(ms)}
	}
	for _, m := range ms[have:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO audit_migrations VALUES (?, ?, ?)", m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close closes the store.
func (s *Store) Close() error {
	return errors.Join(s.w.Close(), s.r.Close())
}

const insert = `INSERT INTO audit_records (time_us, principal, server, tool, effect, destructive, decision, reason,
	approver, dry_run, level, args_digest, args, outcome, ended_us, latency_us, retries, redactions, error)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// values are the insert's arguments for r; ended says whether r's outcome
// is recorded.
func values(r *audit.Record, ended bool) []any {
	v := []any{r.Time.UnixMicro(), r.Principal, r.Server, r.Tool, string(r.Effect), r.Destructive, string(r.Decision),
		r.Reason, r.Approver, r.DryRun, string(r.Level), r.ArgsDigest, nullJSON(r.Args), nil, nil, nil, 0, nil, ""}
	if ended {
		v[13], v[14], v[15], v[16], v[17], v[18] = ending(r)
	}
	return v
}

func ending(r *audit.Record) (outcome, endedUS, latencyUS, retries, redactions, errText any) {
	var red any
	if len(r.Redactions) > 0 {
		b, _ := json.Marshal(r.Redactions)
		red = string(b)
	}
	var ended any
	if !r.Ended.IsZero() {
		ended = r.Ended.UnixMicro()
	}
	if r.Outcome != "" {
		outcome = string(r.Outcome)
	}
	return outcome, ended, r.Latency.Microseconds(), r.Retries, red, r.Error
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// Begin writes r as a call that has not ended.
func (s *Store) Begin(ctx context.Context, r *audit.Record) (int64, error) {
	r = audit.Normalize(r)
	var id int64
	if err := s.w.QueryRowContext(ctx, insert+" RETURNING id", values(r, false)...).Scan(&id); err != nil {
		return 0, fmt.Errorf("sqlite audit store: %w", err)
	}
	return id, nil
}

// Finish records the outcome of the call r.ID.
func (s *Store) Finish(ctx context.Context, r *audit.Record) error {
	r = audit.Normalize(r)
	if r.Outcome == "" {
		r.Outcome = audit.OutcomeUnknown
	}
	outcome, ended, latency, retries, red, errText := ending(r)
	res, err := s.w.ExecContext(ctx, `UPDATE audit_records SET outcome = ?, ended_us = ?, latency_us = ?, retries = ?,
		redactions = ?, error = ? WHERE id = ? AND (outcome IS NULL OR (outcome = ? AND ended_us IS ?))`,
		outcome, ended, latency, retries, red, errText, r.ID, outcome, ended)
	if err != nil {
		return fmt.Errorf("sqlite audit store: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlite audit store: call %d: %w", r.ID, audit.ErrNotPending)
	}
	return nil
}

// Write writes complete records in one transaction.
func (s *Store) Write(ctx context.Context, rs []*audit.Record) error {
	if len(rs) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite audit store: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return fmt.Errorf("sqlite audit store: %w", err)
	}
	defer stmt.Close()
	for _, r := range rs {
		if _, err := stmt.ExecContext(ctx, values(audit.Normalize(r), true)...); err != nil {
			return fmt.Errorf("sqlite audit store: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite audit store: %w", err)
	}
	return nil
}

var dialect = sqlq.Dialect{
	Placeholder: func(int) string { return "?" },
	Time:        "time_us",
	TimeArg:     func(t time.Time) any { return t.UnixMicro() },
}

const columns = `id, time_us, principal, server, tool, effect, destructive, decision, reason, approver, dry_run,
	level, args_digest, args, outcome, ended_us, latency_us, retries, redactions, error`

// Query returns the records f selects.
func (s *Store) Query(ctx context.Context, f audit.Filter) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		where, args := sqlq.Where(dialect, f)
		rows, err := s.r.QueryContext(ctx, "SELECT "+columns+" FROM audit_records"+where, args...)
		if err != nil {
			yield(nil, fmt.Errorf("sqlite audit store: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				yield(nil, fmt.Errorf("sqlite audit store: %w", err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("sqlite audit store: %w", err))
		}
	}
}

func scan(rows *sql.Rows) (*audit.Record, error) {
	var r audit.Record
	var timeUS int64
	var effect, decision, level string
	var args, outcome, redactions sql.NullString
	var endedUS, latencyUS sql.NullInt64
	if err := rows.Scan(&r.ID, &timeUS, &r.Principal, &r.Server, &r.Tool, &effect, &r.Destructive, &decision,
		&r.Reason, &r.Approver, &r.DryRun, &level, &r.ArgsDigest, &args, &outcome, &endedUS, &latencyUS,
		&r.Retries, &redactions, &r.Error); err != nil {
		return nil, err
	}
	r.Time = time.UnixMicro(timeUS).UTC()
	r.Effect, r.Decision, r.Level = hints.Effect(effect), audit.Decision(decision), audit.Level(level)
	if args.Valid {
		r.Args = json.RawMessage(args.String)
	}
	r.Outcome = audit.OutcomeUnknown
	if outcome.Valid {
		r.Outcome = audit.Outcome(outcome.String)
	}
	if endedUS.Valid {
		r.Ended = time.UnixMicro(endedUS.Int64).UTC()
	}
	r.Latency = time.Duration(latencyUS.Int64) * time.Microsecond
	if redactions.Valid {
		if err := json.Unmarshal([]byte(redactions.String), &r.Redactions); err != nil {
			return nil, fmt.Errorf("record %d: redactions: %w", r.ID, err)
		}
	}
	return &r, nil
}
