// Package sqlstore keeps audit records in SQL: an SQLite file, the
// gateway's embedded default, or PostgreSQL, for gateways that run as
// several replicas writing to and reading from one table. A write returns
// once its transaction is committed (fsynced for SQLite; flushed to the
// server's WAL with PostgreSQL's default synchronous_commit). The schema
// is embedded, one set of versioned migrations per dialect, and migrated
// when the store opens (package sqldb).
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/hints"
)

//go:embed migrations
var migrations embed.FS

// Options configure a Store; nil means the defaults.
type Options struct {
	// ReadOnly opens an existing store to query it: nothing is created or
	// migrated, its schema must be current, and a missing SQLite file is
	// an error.
	ReadOnly bool
	// BusyTimeout is how long an SQLite write waits for another process
	// writing the file, unless its context ends first. Zero means 5s.
	BusyTimeout time.Duration
}

// Store is an audit.Store in SQL.
type Store struct {
	db *sqldb.DB
	// start and ended name the time columns: Unix microseconds in SQLite,
	// timestamptz in PostgreSQL.
	start, ended string
}

var _ audit.Store = (*Store)(nil)

// Open opens the store named by spec (sqlite:PATH, created if missing, or
// postgres://USER@HOST/DATABASE) and migrates its schema.
func Open(ctx context.Context, spec string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	db, err := sqldb.Open(ctx, spec, &sqldb.Options{ReadOnly: opts.ReadOnly, BusyTimeout: opts.BusyTimeout})
	if err != nil {
		return nil, fmt.Errorf("audit store: %w", err)
	}
	ms, err := fs.Sub(migrations, "migrations/"+string(db.Dialect))
	if err == nil {
		err = db.Migrate(ctx, sqldb.Schema{Migrations: ms, Table: "goose_audit", Legacy: "audit_migrations"})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("audit store: %w", err)
	}
	s := &Store{db: db, start: "time", ended: "ended"}
	if db.Dialect == sqldb.SQLite {
		s.start, s.ended = "time_us", "ended_us"
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// String names the database without credentials.
func (s *Store) String() string { return s.db.String() }

// Ping reports whether the database answers, within ctx.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// at is the argument of a time column.
func (s *Store) at(t time.Time) any {
	if s.db.Dialect == sqldb.SQLite {
		return t.UnixMicro()
	}
	return t
}

// retry runs f, and once more if it failed on a lost connection while ctx
// lasts; every statement the store retries is idempotent (the call key).
func (s *Store) retry(ctx context.Context, f func() error) error {
	err := f()
	if s.db.ConnectionLost(err) && ctx.Err() == nil {
		err = f()
	}
	if err != nil {
		return fmt.Errorf("audit store (%s): %w", s.db, err)
	}
	return nil
}

// insert returns the statement inserting n records.
func (s *Store) insert(n int) string {
	row := "(?" + strings.Repeat(", ?", insertColumns-1) + ")"
	return s.db.Rebind(`INSERT INTO audit_records (call_key, ` + s.start + `, principal, server, tool, effect, destructive,
	decision, reason, approver, dry_run, level, args_digest, args, outcome, ` + s.ended + `, latency_us, retries, redactions, error,
	signed_in_as)
	VALUES ` + row + strings.Repeat(", "+row, n-1))
}

// insertColumns counts the columns of insert; maxInsert bounds the records
// of one statement (PostgreSQL takes at most 65535 arguments).
const (
	insertColumns = 21
	maxInsert     = 128
)

// newKey returns a random call key where a statement may be retried
// (PostgreSQL); none for SQLite, which never retries, so that its index
// of keys does not grow at random places.
func (s *Store) newKey() any {
	if s.db.Dialect != sqldb.Postgres {
		return nil
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// values are the insert's arguments for r; ended says whether r's outcome
// is recorded.
func (s *Store) values(key any, r *audit.Record, ended bool) []any {
	v := []any{key, s.at(r.Time), r.Principal, r.Server, r.Tool, string(r.Effect), r.Destructive, string(r.Decision),
		r.Reason, r.Approver, r.DryRun, string(r.Level), r.ArgsDigest, nullJSON(r.Args), nil, nil, nil, 0, nil, "",
		r.SignedInAs}
	if ended {
		v[14], v[15], v[16], v[17], v[18], v[19] = s.ending(r)
	}
	return v
}

func (s *Store) ending(r *audit.Record) (outcome, ended, latencyUS, retries, redactions, errText any) {
	var red any
	if len(r.Redactions) > 0 {
		b, _ := json.Marshal(r.Redactions)
		red = string(b)
	}
	var end any
	if !r.Ended.IsZero() {
		end = s.at(r.Ended)
	}
	if r.Outcome != "" {
		outcome = string(r.Outcome)
	}
	return outcome, end, r.Latency.Microseconds(), r.Retries, red, r.Error
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
	args := s.values(s.newKey(), r, false)
	var id int64
	err := s.retry(ctx, func() error {
		// On a retry after a commit whose answer was lost, the key finds
		// the row already written.
		return s.db.Write.QueryRowContext(ctx, s.insert(1)+` ON CONFLICT (call_key) DO UPDATE SET call_key = excluded.call_key
			RETURNING id`, args...).Scan(&id)
	})
	return id, err
}

// Finish records the outcome of the call r.ID.
func (s *Store) Finish(ctx context.Context, r *audit.Record) error {
	r = audit.Normalize(r)
	if r.Outcome == "" {
		r.Outcome = audit.OutcomeUnknown
	}
	outcome, ended, latency, retries, red, errText := s.ending(r)
	var n int64
	err := s.retry(ctx, func() error {
		res, err := s.db.Write.ExecContext(ctx, s.db.Rebind(`UPDATE audit_records SET outcome = ?, `+s.ended+` = ?, latency_us = ?,
			retries = ?, redactions = ?, error = ? WHERE id = ? AND (outcome IS NULL OR (outcome = ? AND `+s.ended+` IS NOT DISTINCT FROM ?))`),
			outcome, ended, latency, retries, red, errText, r.ID, outcome, ended)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("audit store: call %d: %w", r.ID, audit.ErrNotPending)
	}
	return nil
}

// Write writes complete records in one transaction, up to maxInsert in
// one statement.
func (s *Store) Write(ctx context.Context, rs []*audit.Record) error {
	if len(rs) == 0 {
		return nil
	}
	var batches [][]any
	for chunk := range slices.Chunk(rs, maxInsert) {
		args := make([]any, 0, len(chunk)*insertColumns)
		for _, r := range chunk {
			args = append(args, s.values(s.newKey(), audit.Normalize(r), true)...)
		}
		batches = append(batches, args)
	}
	return s.retry(ctx, func() error {
		tx, err := s.db.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, args := range batches {
			if _, err := tx.ExecContext(ctx, s.insert(len(args)/insertColumns)+" ON CONFLICT (call_key) DO NOTHING", args...); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
}

// where returns the WHERE, ORDER BY and LIMIT clauses of f (WHERE omitted
// when f selects everything) and their arguments.
func (s *Store) where(f audit.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		conds, args = append(conds, cond), append(args, arg)
	}
	if !f.Since.IsZero() {
		add(s.start+" >= ?", s.at(f.Since))
	}
	if !f.Until.IsZero() {
		add(s.start+" < ?", s.at(f.Until))
	}
	for _, c := range []struct{ col, v string }{
		{"principal", f.Principal}, {"server", f.Server}, {"tool", f.Tool},
		{"effect", string(f.Effect)}, {"decision", string(f.Decision)},
	} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	switch {
	case f.Outcome == audit.OutcomeUnknown:
		add("(outcome IS NULL OR outcome = ?)", string(f.Outcome))
	case f.Outcome != "":
		add("outcome = ?", string(f.Outcome))
	}
	var b strings.Builder
	if len(conds) > 0 {
		b.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
	if f.Newest {
		b.WriteString(" ORDER BY " + s.start + " DESC, id DESC")
	} else {
		b.WriteString(" ORDER BY " + s.start + ", id")
	}
	if f.Limit > 0 {
		b.WriteString(" LIMIT " + strconv.Itoa(f.Limit))
	}
	return b.String(), args
}

// Query returns the records f selects.
func (s *Store) Query(ctx context.Context, f audit.Filter) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		where, args := s.where(f)
		rows, err := s.db.Read.QueryContext(ctx, s.db.Rebind(`SELECT id, `+s.start+`, principal, server, tool, effect, destructive,
			decision, reason, approver, dry_run, level, args_digest, args, outcome, `+s.ended+`, latency_us, retries, redactions, error,
			signed_in_as FROM audit_records`+where), args...)
		if err != nil {
			yield(nil, fmt.Errorf("audit store (%s): %w", s.db, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				yield(nil, fmt.Errorf("audit store (%s): %w", s.db, err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("audit store (%s): %w", s.db, err))
		}
	}
}

// instant scans a time column of either dialect: Unix microseconds or a
// timestamp; NULL leaves it zero.
type instant struct{ time.Time }

func (i *instant) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		i.Time = time.Time{}
	case int64:
		i.Time = time.UnixMicro(v).UTC()
	case time.Time:
		i.Time = v.UTC()
	default:
		return fmt.Errorf("a time stored as %T", v)
	}
	return nil
}

func scan(rows *sql.Rows) (*audit.Record, error) {
	var r audit.Record
	var start, ended instant
	var effect, decision, level string
	var args, outcome, redactions sql.NullString
	var latencyUS sql.NullInt64
	if err := rows.Scan(&r.ID, &start, &r.Principal, &r.Server, &r.Tool, &effect, &r.Destructive, &decision,
		&r.Reason, &r.Approver, &r.DryRun, &level, &r.ArgsDigest, &args, &outcome, &ended, &latencyUS,
		&r.Retries, &redactions, &r.Error, &r.SignedInAs); err != nil {
		return nil, err
	}
	r.Time, r.Ended = start.Time, ended.Time
	r.Effect, r.Decision, r.Level = hints.Effect(effect), audit.Decision(decision), audit.Level(level)
	if args.Valid {
		r.Args = json.RawMessage(args.String)
	}
	r.Outcome = audit.OutcomeUnknown
	if outcome.Valid {
		r.Outcome = audit.Outcome(outcome.String)
	}
	r.Latency = time.Duration(latencyUS.Int64) * time.Microsecond
	if redactions.Valid {
		if err := json.Unmarshal([]byte(redactions.String), &r.Redactions); err != nil {
			return nil, fmt.Errorf("record %d: redactions: %w", r.ID, err)
		}
	}
	return &r, nil
}
