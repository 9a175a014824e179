// Package sqlstore keeps approval requests in SQL: PostgreSQL, shared by
// the replicas of a gateway so that a request opened by one is decided on
// the page of another and released on a third, and SQLite, for one
// process that must not lose its approvals when it restarts. One
// implementation serves both (package sqldb) in one table,
// preflight_approvals, whose schema is an embedded, versioned migration
// applied when the store opens.
//
// Each decision and each use is one conditional UPDATE (state = 'pending',
// or state = 'approved', and not expired), so exactly one of any number of
// replicas racing for the same request wins, whatever the isolation level.
// Opening a request is one transaction that first takes a lock on its
// principal (an advisory lock in PostgreSQL; SQLite's writing transactions
// are serial), so two replicas asked the same call at once open one
// request, and a principal's open requests stay within their bound.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/hints"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Table is the table requests are kept in.
const Table = "preflight_approvals"

// Defaults of [Options].
const (
	DefaultMaxRequests = 1 << 17
	DefaultMaxOpen     = 64
	DefaultRetain      = 24 * time.Hour
)

// Options bound a Store; nil means the defaults.
type Options struct {
	// MaxRequests bounds the requests kept, decided ones included.
	// Default [DefaultMaxRequests]. With several replicas the bound is
	// checked by each, so it may be passed by a few requests.
	MaxRequests int
	// MaxOpen bounds the open requests of one principal. Default
	// [DefaultMaxOpen].
	MaxOpen int
	// Retain is how long a request is kept after it expired, was used or
	// lapsed after a denial, for the page's history. Default
	// [DefaultRetain].
	Retain time.Duration
}

func (o *Options) withDefaults() Options {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = DefaultMaxRequests
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = DefaultMaxOpen
	}
	if opts.Retain <= 0 {
		opts.Retain = DefaultRetain
	}
	return opts
}

// Store is an approval.Store in SQL. Close it when done.
type Store struct {
	db   *sqldb.DB
	opts Options
	// lockPrincipal serialises the openings of one principal's requests
	// within a transaction; empty when transactions are serial anyway
	// (SQLite).
	lockPrincipal string
}

var _ approval.Store = (*Store)(nil)

// Open opens the store named by spec, sqlite:PATH (a file, created if
// needed) or a PostgreSQL URL (postgres:// or postgresql://), and
// migrates its schema.
func Open(ctx context.Context, spec string, o *Options) (*Store, error) {
	db, err := sqldb.Open(ctx, spec, nil)
	if err != nil {
		return nil, fmt.Errorf("approval store: %w", err)
	}
	ms, err := fs.Sub(migrations, "migrations")
	if err == nil {
		err = db.Migrate(ctx, sqldb.Schema{Migrations: ms, Table: "goose_approvals"})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("approval store: %w", err)
	}
	s := &Store{db: db, opts: o.withDefaults()}
	if db.Dialect == sqldb.Postgres {
		s.lockPrincipal = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// String names the store without credentials, for the start-up log.
func (s *Store) String() string { return s.db.String() }

// Ping reports whether the database answers, within ctx.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

const columns = "id, principal, server, tool, args_digest, effect, reason, args, args_omitted, state, created, expires, decided_by, decided_by_name, decided, used_at"

// micro is t in microseconds, 0 for the zero time.
func micro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicro(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// lapsedAt is when r stops mattering.
func lapsedAt(r *approval.Request) int64 {
	if r.State == approval.Used {
		return micro(r.UsedAt)
	}
	return micro(r.Expires)
}

type scanner interface{ Scan(dest ...any) error }

func scan(sc scanner) (*approval.Request, error) {
	var (
		r                                approval.Request
		effect, args, state, byP, byName string
		created, expires, decided, used  int64
	)
	if err := sc.Scan(&r.ID, &r.Principal, &r.Server, &r.Tool, &r.ArgsDigest, &effect, &r.Reason, &args, &r.ArgsOmitted,
		&state, &created, &expires, &byP, &byName, &decided, &used); err != nil {
		return nil, err
	}
	r.Effect, r.State = hints.Effect(effect), approval.State(state)
	r.Created, r.Expires, r.Decided, r.UsedAt = fromMicro(created), fromMicro(expires), fromMicro(decided), fromMicro(used)
	r.DecidedBy = approval.Approver{Principal: byP, Name: byName}
	if err := json.Unmarshal([]byte(args), &r.Args); err != nil {
		return nil, fmt.Errorf("approval store: request %s: its arguments: %w", r.ID, err)
	}
	return &r, nil
}

// snapshot gives r its state at now.
func snapshot(r *approval.Request, now time.Time) *approval.Request {
	r.State = r.At(now)
	return r
}

// fail wraps a database error with where the store is.
func (s *Store) fail(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("approval store (%s): %w", s.db, err)
}

// Open implements approval.Store.
func (s *Store) Open(ctx context.Context, r *approval.Request, now time.Time) (*approval.Request, bool, error) {
	if !approval.ValidID(r.ID) {
		return nil, false, errors.New("approval: request id is not fresh")
	}
	args, err := json.Marshal(r.Args)
	if err != nil {
		return nil, false, err
	}
	if r.Args == nil {
		args = []byte("[]")
	}
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, s.fail(err)
	}
	defer tx.Rollback()
	if s.lockPrincipal != "" {
		if _, err := tx.ExecContext(ctx, s.lockPrincipal, Table+":"+r.Principal); err != nil {
			return nil, false, s.fail(err)
		}
	}
	n := micro(now)
	open := " AND state IN ('pending', 'approved', 'denied') AND expires > ?"
	got, err := scan(tx.QueryRowContext(ctx, s.db.Rebind("SELECT "+columns+" FROM "+Table+
		" WHERE principal = ? AND server = ? AND tool = ? AND args_digest = ?"+open+" ORDER BY created DESC, id LIMIT 1"),
		r.Principal, r.Server, r.Tool, r.ArgsDigest, n))
	switch {
	case err == nil:
		return snapshot(got, now), false, s.fail(tx.Commit())
	case !errors.Is(err, sql.ErrNoRows):
		return nil, false, s.fail(err)
	}
	var count int
	if err := tx.QueryRowContext(ctx, s.db.Rebind("SELECT COUNT(*) FROM "+Table+" WHERE principal = ?"+open), r.Principal, n).Scan(&count); err != nil {
		return nil, false, s.fail(err)
	}
	if count >= s.opts.MaxOpen {
		return nil, false, approval.ErrFull
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind("DELETE FROM "+Table+" WHERE lapsed < ?"), micro(now.Add(-s.opts.Retain))); err != nil {
		return nil, false, s.fail(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+Table).Scan(&count); err != nil {
		return nil, false, s.fail(err)
	}
	if count >= s.opts.MaxRequests {
		// Forget the request that lapsed first; never an open one.
		res, err := tx.ExecContext(ctx, s.db.Rebind("DELETE FROM "+Table+" WHERE id = (SELECT id FROM "+Table+
			" WHERE NOT (state IN ('pending', 'approved', 'denied') AND expires > ?) ORDER BY lapsed LIMIT 1)"), n)
		if err != nil {
			return nil, false, s.fail(err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil, false, approval.ErrFull
		}
	}
	c := r.Clone()
	c.State = approval.Pending
	c.Created, c.Expires = fromMicro(micro(c.Created)), fromMicro(micro(c.Expires))
	if _, err := tx.ExecContext(ctx, s.db.Rebind("INSERT INTO "+Table+" ("+columns+", lapsed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', 0, 0, ?)"),
		c.ID, c.Principal, c.Server, c.Tool, c.ArgsDigest, string(c.Effect), c.Reason, string(args), c.ArgsOmitted,
		string(c.State), micro(c.Created), micro(c.Expires), lapsedAt(c)); err != nil {
		return nil, false, s.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, s.fail(err)
	}
	return c, true, nil
}

// Get implements approval.Store.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (*approval.Request, error) {
	r, err := scan(s.db.Read.QueryRowContext(ctx, s.db.Rebind("SELECT "+columns+" FROM "+Table+" WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, approval.ErrNotFound
	}
	if err != nil {
		return nil, s.fail(err)
	}
	return snapshot(r, now), nil
}

// Decide implements approval.Store: one conditional UPDATE, so a request
// is decided once however many replicas race.
func (s *Store) Decide(ctx context.Context, id string, d approval.Decision) (*approval.Request, error) {
	set, args := "state = 'denied', lapsed = expires", []any{}
	if d.Approve {
		set, args = "state = 'approved', expires = ?, lapsed = ?", []any{micro(d.UseBy), micro(d.UseBy)}
	}
	set += ", decided_by = ?, decided_by_name = ?, decided = ?"
	args = append(args, d.By.Principal, d.By.Name, micro(d.At), id, micro(d.At))
	r, err := scan(s.db.Write.QueryRowContext(ctx, s.db.Rebind("UPDATE "+Table+" SET "+set+
		" WHERE id = ? AND state = 'pending' AND expires > ? RETURNING "+columns), args...))
	if err == nil {
		return snapshot(r, d.At), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, s.fail(err)
	}
	r, err = s.Get(ctx, id, d.At)
	if err != nil {
		return nil, err
	}
	return r, approval.ErrNotPending
}

// Consume implements approval.Store: one conditional UPDATE, so an
// approval is used once however many replicas race.
func (s *Store) Consume(ctx context.Context, id string, now time.Time) (*approval.Request, error) {
	n := micro(now)
	r, err := scan(s.db.Write.QueryRowContext(ctx, s.db.Rebind("UPDATE "+Table+" SET state = 'used', used_at = ?, lapsed = ?"+
		" WHERE id = ? AND state = 'approved' AND expires > ? RETURNING "+columns), n, n, id, n))
	if err == nil {
		return snapshot(r, now), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, s.fail(err)
	}
	r, err = s.Get(ctx, id, now)
	if err != nil {
		return nil, err
	}
	switch r.State {
	case approval.Used:
		return r, approval.ErrUsed
	case approval.Expired:
		return r, approval.ErrExpired
	}
	return r, approval.ErrNotApproved
}

// List implements approval.Store.
func (s *Store) List(ctx context.Context, f approval.ListFilter, now time.Time) ([]*approval.Request, error) {
	q, args := "SELECT "+columns+" FROM "+Table, []any{}
	if !f.All {
		q, args = q+" WHERE principal = ?", append(args, f.Principal)
	}
	q += " ORDER BY created DESC, id"
	if f.Limit > 0 {
		q, args = q+" LIMIT ?", append(args, f.Limit)
	}
	rows, err := s.db.Read.QueryContext(ctx, s.db.Rebind(q), args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []*approval.Request
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, snapshot(r, now))
	}
	return out, s.fail(rows.Err())
}
