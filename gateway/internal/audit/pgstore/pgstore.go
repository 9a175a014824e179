// Package pgstore keeps audit records in PostgreSQL, for gateways that run
// as several replicas: every replica writes to and reads from the same
// table. A write returns once its transaction is committed (with the
// server's default synchronous_commit, flushed to its WAL). The schema is
// embedded and migrated when the store opens, under an advisory lock so
// that replicas starting together migrate once.
package pgstore

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/sqlq"
	"github.com/preflightmcp/preflight/hints"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key held while migrating.
const migrationLock = 0x70666175 // "pfau"

// Options configure a Store; nil means the defaults.
type Options struct {
	// MaxConns bounds the connections to the server. Zero means the
	// DSN's pool_max_conns, else pgxpool's default (4, or the number of
	// CPUs if more).
	MaxConns int32
	// ReadOnly opens an existing store to query it: its schema must be
	// current; nothing is created or migrated.
	ReadOnly bool
}

// Store is an audit.Store in a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
}

var _ audit.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) and migrates its schema.
func Open(ctx context.Context, dsn string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres audit store: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres audit store: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx, opts.ReadOnly); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres audit store: %w", err)
	}
	return s, nil
}

// migrate applies the migrations the database lacks, in one transaction
// under an advisory lock.
func (s *Store) migrate(ctx context.Context, readOnly bool) error {
	ms, err := sqlq.Migrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if readOnly {
		var v int
		if err := s.pool.QueryRow(ctx, "SELECT max(version) FROM audit_migrations").Scan(&v); err != nil {
			return fmt.Errorf("not an audit store: %w", err)
		}
		if v > len(ms) {
			return &sqlq.NewerError{Have: v, Know: len(ms)}
		}
		if v < len(ms) {
			return fmt.Errorf("the audit database has schema version %d, older than %d: open it once read-write (preflight serve) to migrate it", v, len(ms))
		}
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS audit_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM audit_migrations").Scan(&have); err != nil {
			return err
		}
		if have > len(ms) {
			return &sqlq.NewerError{Have: have, Know: len(ms)}
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO audit_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close closes the connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// retry runs f, and once more if it failed on a connection (a server
// restarted under a pooled connection) while ctx lasts; every statement
// the store retries is idempotent.
func retry(ctx context.Context, f func() error) error {
	err := f()
	if err != nil && connectionError(err) && ctx.Err() == nil {
		err = f()
	}
	if err != nil {
		return fmt.Errorf("postgres audit store: %w", err)
	}
	return nil
}

// connectionError reports an error of the connection rather than of the
// statement: no server error at all, or one of class 08 (connection
// exception) or 57 (operator intervention: the server shut down).
func connectionError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return len(pe.Code) == 5 && (pe.Code[:2] == "08" || pe.Code[:2] == "57")
}

const insert = `INSERT INTO audit_records (call_key, time, principal, server, tool, effect, destructive, decision,
	reason, approver, dry_run, level, args_digest, args, outcome, ended, latency_us, retries, redactions, error)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

// newKey returns a random call key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// values are the insert's arguments for r; ended says whether r's outcome
// is recorded.
func values(key string, r *audit.Record, ended bool) []any {
	v := []any{key, r.Time, r.Principal, r.Server, r.Tool, string(r.Effect), r.Destructive, string(r.Decision),
		r.Reason, r.Approver, r.DryRun, string(r.Level), r.ArgsDigest, nullJSON(r.Args), nil, nil, nil, 0, nil, ""}
	if ended {
		v[14], v[15], v[16], v[17], v[18], v[19] = ending(r)
	}
	return v
}

func ending(r *audit.Record) (outcome, ended, latencyUS, retries, redactions, errText any) {
	var red any
	if len(r.Redactions) > 0 {
		b, _ := json.Marshal(r.Redactions)
		red = string(b)
	}
	var end any
	if !r.Ended.IsZero() {
		end = r.Ended
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
	args := values(newKey(), r, false)
	var id int64
	err := retry(ctx, func() error {
		// On a retry after a commit whose answer was lost, the key finds
		// the row already written.
		return s.pool.QueryRow(ctx, insert+` ON CONFLICT (call_key) DO UPDATE SET call_key = EXCLUDED.call_key
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
	outcome, ended, latency, retries, red, errText := ending(r)
	var n int64
	err := retry(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE audit_records SET outcome = $1, ended = $2, latency_us = $3, retries = $4,
			redactions = $5, error = $6 WHERE id = $7 AND (outcome IS NULL OR (outcome = $1 AND ended IS NOT DISTINCT FROM $2))`,
			outcome, ended, latency, retries, red, errText, r.ID)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("postgres audit store: call %d: %w", r.ID, audit.ErrNotPending)
	}
	return nil
}

// Write writes complete records in one transaction.
func (s *Store) Write(ctx context.Context, rs []*audit.Record) error {
	if len(rs) == 0 {
		return nil
	}
	var b pgx.Batch
	for _, r := range rs {
		b.Queue(insert+" ON CONFLICT (call_key) DO NOTHING", values(newKey(), audit.Normalize(r), true)...)
	}
	return retry(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return tx.SendBatch(ctx, &b).Close()
		})
	})
}

var dialect = sqlq.Dialect{
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	Time:        "time",
	TimeArg:     func(t time.Time) any { return t },
}

const columns = `id, time, principal, server, tool, effect, destructive, decision, reason, approver, dry_run,
	level, args_digest, args, outcome, ended, latency_us, retries, redactions, error`

// Query returns the records f selects.
func (s *Store) Query(ctx context.Context, f audit.Filter) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		where, args := sqlq.Where(dialect, f)
		rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM audit_records"+where, args...)
		if err != nil {
			yield(nil, fmt.Errorf("postgres audit store: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				yield(nil, fmt.Errorf("postgres audit store: %w", err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("postgres audit store: %w", err))
		}
	}
}

func scan(rows pgx.Rows) (*audit.Record, error) {
	var r audit.Record
	var effect, decision, level string
	var args, outcome, redactions *string
	var ended *time.Time
	var latencyUS *int64
	if err := rows.Scan(&r.ID, &r.Time, &r.Principal, &r.Server, &r.Tool, &effect, &r.Destructive, &decision,
		&r.Reason, &r.Approver, &r.DryRun, &level, &r.ArgsDigest, &args, &outcome, &ended, &latencyUS,
		&r.Retries, &redactions, &r.Error); err != nil {
		return nil, err
	}
	r.Time = r.Time.UTC()
	r.Effect, r.Decision, r.Level = hints.Effect(effect), audit.Decision(decision), audit.Level(level)
	if args != nil {
		r.Args = json.RawMessage(*args)
	}
	r.Outcome = audit.OutcomeUnknown
	if outcome != nil {
		r.Outcome = audit.Outcome(*outcome)
	}
	if ended != nil {
		r.Ended = ended.UTC()
	}
	if latencyUS != nil {
		r.Latency = time.Duration(*latencyUS) * time.Microsecond
	}
	if redactions != nil {
		if err := json.Unmarshal([]byte(*redactions), &r.Redactions); err != nil {
			return nil, fmt.Errorf("record %d: redactions: %w", r.ID, err)
		}
	}
	return &r, nil
}
