package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
)

// Postgres is a pin.Store in PostgreSQL, shared by the replicas of a
// gateway.
type Postgres struct {
	pool *pgxpool.Pool
	e    engine
}

// OpenPostgres connects to the PostgreSQL database at url
// (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]) and
// creates the table if needed. The pool's limits are pgx's defaults unless
// the URL sets pool_max_conns and the like; every query is bounded by ctx.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's error may repeat the URL, password included.
		return nil, errors.New("sqlstore: not a PostgreSQL URL (postgres://USER@HOST[:PORT]/DATABASE)")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: postgres: %w", err)
	}
	// Replicas starting together create the table one at a time.
	err = pgx.BeginFunc(ctx, poolBeginner{pool}, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", Table); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, createTable); err != nil {
			return err
		}
		_, err := t.Exec(ctx, createServers)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlstore: postgres %s: %w", cfg.ConnConfig.Host, err)
	}
	s := &Postgres{pool: pool}
	s.e = engine{
		begin: func(ctx context.Context) (tx, error) {
			t, err := pool.Begin(ctx)
			if err != nil {
				return nil, err
			}
			return pgTx{t}, nil
		},
		queryRow: func(ctx context.Context, query string, args ...any) scanner {
			return pgRow{pool.QueryRow(ctx, query, args...)}
		},
		query: func(ctx context.Context, query string, args ...any) (rows, error) {
			rs, err := pool.Query(ctx, query, args...)
			if err != nil {
				return nil, err
			}
			return rs, nil
		},
		rebind: rebindDollar,
		lock:   " FOR UPDATE",
	}
	return s, nil
}

type poolBeginner struct{ p *pgxpool.Pool }

func (b poolBeginner) Begin(ctx context.Context) (pgx.Tx, error) { return b.p.Begin(ctx) }

// rebindDollar writes ? placeholders as $1, $2, ...
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Close closes the pool.
func (s *Postgres) Close() error { s.pool.Close(); return nil }

// Get implements pin.Store.
func (s *Postgres) Get(ctx context.Context, server, tool string) (*pin.Record, error) {
	return s.e.get(ctx, server, tool)
}

// List implements pin.Store.
func (s *Postgres) List(ctx context.Context, server string) ([]*pin.Record, error) {
	return s.e.list(ctx, server)
}

// Pin implements pin.Store.
func (s *Postgres) Pin(ctx context.Context, server string, def *pin.Definition, at time.Time) (*pin.Record, error) {
	return s.e.pin(ctx, server, def, at)
}

// Quarantine implements pin.Store.
func (s *Postgres) Quarantine(ctx context.Context, server, tool, pinned string, state pin.State, pending *pin.Definition, at time.Time) (*pin.Record, error) {
	return s.e.quarantine(ctx, server, tool, pinned, state, pending, at)
}

// Approve implements pin.Store.
func (s *Postgres) Approve(ctx context.Context, server, tool, fingerprint, approver string, at time.Time) (*pin.Record, error) {
	return s.e.approve(ctx, server, tool, fingerprint, approver, at)
}

// Listed implements pin.Store.
func (s *Postgres) Listed(ctx context.Context, server string, at time.Time) (bool, error) {
	return s.e.listed(ctx, server, at)
}

type pgTx struct{ t pgx.Tx }

func (t pgTx) QueryRow(ctx context.Context, query string, args ...any) scanner {
	return pgRow{t.t.QueryRow(ctx, query, args...)}
}

func (t pgTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.t.Exec(ctx, query, args...)
	return err
}

func (t pgTx) Commit(ctx context.Context) error   { return t.t.Commit(ctx) }
func (t pgTx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	if err := r.r.Scan(dest...); errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	} else {
		return err
	}
}
