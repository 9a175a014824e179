// Package sqlstore keeps pins in SQL: SQLite, the embedded default (one
// file, shared by the gateway and the preflight pins command on one
// machine), and PostgreSQL, shared by the replicas of a gateway. One
// implementation serves both (package sqldb): pins in one table,
// preflight_pins, and when each server was first listed in another,
// preflight_pin_servers, their schema an embedded, versioned migration
// applied when the store opens. Each change is one transaction that reads
// the row, applies pin.ApplyQuarantine or pin.ApplyApprove, and writes it
// back.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Table is the table pins are kept in.
const Table = "preflight_pins"

// ServersTable records when each server was first listed.
const ServersTable = "preflight_pin_servers"

// Store is a pin.Store in SQL. Close it when done.
type Store struct {
	db *sqldb.DB
	// lock ends a SELECT that reads a row to change it; empty when
	// writing transactions are serial anyway (SQLite).
	lock string
	defs defCache
}

var _ pin.Store = (*Store)(nil)

// Open opens the store named by spec, sqlite:PATH (a file, created if
// needed) or a PostgreSQL URL (postgres:// or postgresql://), and
// migrates its schema.
func Open(ctx context.Context, spec string) (*Store, error) {
	db, err := sqldb.Open(ctx, spec, nil)
	if err != nil {
		return nil, fmt.Errorf("pin store: %w", err)
	}
	ms, err := fs.Sub(migrations, "migrations")
	if err == nil {
		err = db.Migrate(ctx, sqldb.Schema{Migrations: ms, Table: "goose_pins"})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("pin store: %w", err)
	}
	s := &Store{db: db}
	if db.Dialect == sqldb.Postgres {
		s.lock = " FOR UPDATE"
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// String names the database without credentials.
func (s *Store) String() string { return s.db.String() }

// Ping reports whether the database answers, within ctx.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// row is a record as stored.
type row struct {
	server, tool        string
	pinned              []byte
	pinnedAt            int64 // microseconds since 1970, UTC
	approvedBy, state   string
	pending             []byte // nil: none
	pendingSince        sql.NullInt64
	pinnedFP, pendingFP string
}

// micro truncates times to what both databases keep.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func toRow(r *pin.Record) (*row, error) {
	pinned, err := json.Marshal(r.Pinned)
	if err != nil {
		return nil, err
	}
	w := &row{server: r.Server, tool: r.Tool, pinned: pinned, pinnedAt: micro(r.PinnedAt).UnixMicro(),
		approvedBy: r.ApprovedBy, state: string(r.State), pinnedFP: r.Pinned.Fingerprint()}
	if r.Pending != nil {
		if w.pending, err = json.Marshal(r.Pending); err != nil {
			return nil, err
		}
		w.pendingFP = r.Pending.Fingerprint()
		w.pendingSince = sql.NullInt64{Int64: micro(r.PendingSince).UnixMicro(), Valid: true}
	}
	return w, nil
}

func (w *row) record(c *defCache) (*pin.Record, error) {
	r := &pin.Record{Server: w.server, Tool: w.tool, PinnedAt: time.UnixMicro(w.pinnedAt).UTC(),
		ApprovedBy: w.approvedBy, State: pin.State(w.state)}
	var err error
	if r.Pinned, err = c.decode(w.pinned); err != nil {
		return nil, fmt.Errorf("sqlstore: the pinned definition of %q/%q: %w", w.server, w.tool, err)
	}
	if w.pending != nil {
		if r.Pending, err = c.decode(w.pending); err != nil {
			return nil, fmt.Errorf("sqlstore: the pending definition of %q/%q: %w", w.server, w.tool, err)
		}
		if w.pendingSince.Valid {
			r.PendingSince = time.UnixMicro(w.pendingSince.Int64).UTC()
		}
	}
	return r, nil
}

// columns lists the columns in the order rows are read and written.
const columns = "server, tool, pinned, pinned_fp, pinned_at, approved_by, state, pending, pending_fp, pending_since"

// scanner is a row of a query: *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanRow(s scanner, c *defCache) (*pin.Record, error) {
	var w row
	var pinned string
	var pending, pendingFP sql.NullString // pending_fp is for people, not read back
	if err := s.Scan(&w.server, &w.tool, &pinned, &w.pinnedFP, &w.pinnedAt, &w.approvedBy, &w.state, &pending, &pendingFP, &w.pendingSince); err != nil {
		return nil, err
	}
	w.pinned = []byte(pinned)
	if pending.Valid {
		w.pending = []byte(pending.String)
	}
	return w.record(c)
}

// defCache maps the stored text of definitions to their decoding, so that
// reading the same pins again does not decode and fingerprint them again
// (the key is the whole text: nothing is trusted that was not read).
type defCache struct {
	mu   sync.Mutex
	defs map[string]*pin.Definition
}

// maxCachedDefs bounds a store's cache; when full it starts over.
const maxCachedDefs = 20_000

func (c *defCache) decode(data []byte) (*pin.Definition, error) {
	c.mu.Lock()
	d := c.defs[string(data)]
	c.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d = new(pin.Definition)
	if err := json.Unmarshal(data, d); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.defs == nil || len(c.defs) >= maxCachedDefs {
		c.defs = map[string]*pin.Definition{}
	}
	c.defs[string(data)] = d
	c.mu.Unlock()
	return d, nil
}

// args returns w's values in the order of columns.
func (w *row) args() []any {
	var pending, pendingFP any
	if w.pending != nil {
		pending, pendingFP = string(w.pending), w.pendingFP
	}
	var since any
	if w.pendingSince.Valid {
		since = w.pendingSince.Int64
	}
	return []any{w.server, w.tool, string(w.pinned), w.pinnedFP, w.pinnedAt, w.approvedBy, w.state, pending, pendingFP, since}
}

// Get implements pin.Store.
func (s *Store) Get(ctx context.Context, server, tool string) (*pin.Record, error) {
	r, err := scanRow(s.db.Read.QueryRowContext(ctx, s.db.Rebind("SELECT "+columns+" FROM "+Table+" WHERE server = ? AND tool = ?"), server, tool), &s.defs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, pin.ErrNotFound
	}
	return r, err
}

// List implements pin.Store.
func (s *Store) List(ctx context.Context, server string) ([]*pin.Record, error) {
	q, args := "SELECT "+columns+" FROM "+Table, []any{}
	if server != "" {
		q, args = q+" WHERE server = ?", append(args, server)
	}
	rs, err := s.db.Read.QueryContext(ctx, s.db.Rebind(q+" ORDER BY server, tool"), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []*pin.Record{}
	for rs.Next() {
		r, err := scanRow(rs, &s.defs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	pin.SortRecords(out) // by Go's order of strings, whatever the collation
	return out, nil
}

// inTx runs f in a writing transaction, committed when f succeeds.
func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	t, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := f(t); err != nil {
		return err
	}
	return t.Commit()
}

// Pin implements pin.Store.
func (s *Store) Pin(ctx context.Context, server string, def *pin.Definition, at time.Time) (*pin.Record, error) {
	w, err := toRow(&pin.Record{Server: server, Tool: def.Name, Pinned: def, PinnedAt: at, State: pin.StatePinned})
	if err != nil {
		return nil, err
	}
	var out *pin.Record
	err = s.inTx(ctx, func(t *sql.Tx) error {
		if _, err := t.ExecContext(ctx, s.db.Rebind("INSERT INTO "+Table+" ("+columns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (server, tool) DO NOTHING"), w.args()...); err != nil {
			return err
		}
		out, err = scanRow(t.QueryRowContext(ctx, s.db.Rebind("SELECT "+columns+" FROM "+Table+" WHERE server = ? AND tool = ?"), server, def.Name), &s.defs)
		return err
	})
	return out, err
}

// update applies f to a record in one transaction. When f fails with a
// record (pin.ErrConflict), that record is returned with the error.
func (s *Store) update(ctx context.Context, server, tool string, f func(*pin.Record) (*pin.Record, error)) (*pin.Record, error) {
	var out *pin.Record
	var ferr error
	err := s.inTx(ctx, func(t *sql.Tx) error {
		r, err := scanRow(t.QueryRowContext(ctx, s.db.Rebind("SELECT "+columns+" FROM "+Table+" WHERE server = ? AND tool = ?"+s.lock), server, tool), &s.defs)
		if errors.Is(err, sql.ErrNoRows) {
			return pin.ErrNotFound
		}
		if err != nil {
			return err
		}
		if out, ferr = f(r); ferr != nil {
			return ferr
		}
		w, err := toRow(out)
		if err != nil {
			return err
		}
		a := w.args() // server and tool first: they go last here
		_, err = t.ExecContext(ctx, s.db.Rebind("UPDATE "+Table+" SET pinned = ?, pinned_fp = ?, pinned_at = ?, approved_by = ?, state = ?, pending = ?, pending_fp = ?, pending_since = ? WHERE server = ? AND tool = ?"),
			a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[0], a[1])
		return err
	})
	if ferr != nil {
		return out, ferr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Quarantine implements pin.Store.
func (s *Store) Quarantine(ctx context.Context, server, tool, pinned string, state pin.State, pending *pin.Definition, at time.Time) (*pin.Record, error) {
	return s.update(ctx, server, tool, func(r *pin.Record) (*pin.Record, error) {
		return pin.ApplyQuarantine(r, pinned, state, pending, micro(at))
	})
}

// Listed implements pin.Store: it records server's first listing unless
// one was recorded, and reports whether this one is.
func (s *Store) Listed(ctx context.Context, server string, at time.Time) (bool, error) {
	var first bool
	err := s.inTx(ctx, func(t *sql.Tx) error {
		var got string
		err := t.QueryRowContext(ctx, s.db.Rebind("INSERT INTO "+ServersTable+" (server, listed_at) VALUES (?, ?) ON CONFLICT (server) DO NOTHING RETURNING server"),
			server, micro(at).UnixMicro()).Scan(&got)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		first = true
		return nil
	})
	return first, err
}

// Approve implements pin.Store.
func (s *Store) Approve(ctx context.Context, server, tool, fingerprint, approver string, at time.Time) (*pin.Record, error) {
	return s.update(ctx, server, tool, func(r *pin.Record) (*pin.Record, error) {
		return pin.ApplyApprove(r, fingerprint, approver, micro(at))
	})
}
