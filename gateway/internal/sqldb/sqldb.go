// Package sqldb is the SQL layer of the gateway's stores (audit, approvals,
// pins). It opens the database a store spec names, an SQLite file
// (sqlite:PATH, pure Go) or PostgreSQL (postgres://, through pgx's
// database/sql driver), with one set of pragmas and bounded pools; it
// rewrites a query's ? placeholders for the dialect; and it brings a
// store's schema up to date with the store's embedded, versioned
// migrations (goose), each store recording its versions in its own table
// so that several stores share one database.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect is the kind of database.
type Dialect string

// The dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Defaults of [Options].
const (
	DefaultBusyTimeout = 5 * time.Second
	DefaultMaxConns    = 8
)

// sqliteReaders bounds the connections that read an SQLite file.
const sqliteReaders = 4

// Options configure Open; nil means the defaults.
type Options struct {
	// ReadOnly opens an existing database to query it: a missing SQLite
	// file is an error, and Migrate only checks that the schema is current.
	ReadOnly bool
	// BusyTimeout is how long an SQLite write waits for another process
	// holding the file's lock. Zero means [DefaultBusyTimeout].
	BusyTimeout time.Duration
	// MaxConns bounds the connections to PostgreSQL. Zero means
	// [DefaultMaxConns].
	MaxConns int
}

// DB is an open database. Write and Read are the same pool for
// PostgreSQL; for SQLite, Write has one connection (the file takes one
// writer at a time, so writers of the process queue in Go rather than
// polling the file's lock) and Read a few.
type DB struct {
	Dialect Dialect
	// Write runs statements and transactions that write.
	Write *sql.DB
	// Read runs queries.
	Read *sql.DB

	name     string
	readOnly bool
}

// Open opens the database named by spec:
//
//	sqlite:PATH                   an SQLite file (created if missing)
//	postgres://USER@HOST/DB?...   a PostgreSQL database (also postgresql://)
//
// An SQLite file is in WAL mode with synchronous=FULL, so a transaction is
// on disk when it commits; a writing transaction takes the file's lock
// when it begins, so two never deadlock.
func Open(ctx context.Context, spec string, o *Options) (*DB, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(spec, "sqlite:"), opts)
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return openPostgres(spec, opts)
	}
	return nil, fmt.Errorf("database %q: want sqlite:PATH or postgres://USER@HOST/DATABASE", Redact(spec))
}

func openSQLite(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" || strings.HasPrefix(path, "//") || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return nil, fmt.Errorf("sqlite database %q: write sqlite:PATH, a file path (sqlite:NAME.db, sqlite:/var/lib/preflight/NAME.db)", path)
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("sqlite database: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	r.SetMaxOpenConns(sqliteReaders)
	r.SetConnMaxIdleTime(time.Minute)
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		r.Close()
		return nil, err
	}
	w.SetMaxOpenConns(1)
	db := &DB{Dialect: SQLite, Write: w, Read: r, name: "sqlite " + path, readOnly: opts.ReadOnly}
	if err := db.wal(ctx, opts.BusyTimeout); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", db, err)
	}
	return db, nil
}

// wal puts the file in WAL mode (it stays so). SQLite answers a
// connection switching the mode while another one opens the file with
// SQLITE_BUSY at once, without waiting: wal tries again until busy.
func (db *DB) wal(ctx context.Context, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for {
		var mode string
		err := db.Write.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
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

func openPostgres(spec string, opts Options) (*DB, error) {
	spec, max, err := poolMaxConns(spec)
	if err != nil {
		return nil, fmt.Errorf("database %q: %w", Redact(spec), err)
	}
	if max > 0 {
		opts.MaxConns = max
	}
	cfg, err := pgx.ParseConfig(spec)
	if err != nil {
		// pgx's error may repeat the URL, password included.
		return nil, fmt.Errorf("database %q: not a PostgreSQL URL (postgres://USER@HOST[:PORT]/DATABASE)", Redact(spec))
	}
	name := "postgres at " + cfg.Host
	if cfg.Port != 0 {
		name += ":" + strconv.Itoa(int(cfg.Port))
	}
	pool := stdlib.OpenDB(*cfg)
	pool.SetMaxOpenConns(opts.MaxConns)
	pool.SetMaxIdleConns(min(opts.MaxConns, 4))
	pool.SetConnMaxIdleTime(time.Minute)
	return &DB{Dialect: Postgres, Write: pool, Read: pool, name: name, readOnly: opts.ReadOnly}, nil
}

// poolMaxConns takes the parameter pool_max_conns (pgxpool's, kept for
// the URLs written for it) out of a postgres:// URL: the server would
// refuse it as a setting of its own.
func poolMaxConns(spec string) (string, int, error) {
	u, err := url.Parse(spec)
	if err != nil || !u.Query().Has("pool_max_conns") {
		return spec, 0, nil
	}
	q := u.Query()
	n, err := strconv.Atoi(q.Get("pool_max_conns"))
	if err != nil || n <= 0 {
		return spec, 0, errors.New("pool_max_conns: want a positive number")
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

// Close closes the pools.
func (db *DB) Close() error {
	if db.Read == db.Write {
		return db.Write.Close()
	}
	return errors.Join(db.Write.Close(), db.Read.Close())
}

// String names the database without credentials, for messages.
func (db *DB) String() string { return db.name }

// Ping reports whether the database answers, within ctx.
func (db *DB) Ping(ctx context.Context) error { return db.Read.PingContext(ctx) }

// Rebind writes q's ? placeholders as the dialect wants them: $1, $2, ...
// for PostgreSQL. Write queries with ?, never a literal ? in them.
func (db *DB) Rebind(q string) string {
	if db.Dialect != Postgres {
		return q
	}
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

// ConnectionLost reports an error of a PostgreSQL connection rather than
// of the statement (a server restarted under a pooled connection): no
// server error at all, or one of class 08 (connection exception) or 57
// (operator intervention). A statement that failed so may have committed.
func (db *DB) ConnectionLost(err error) bool {
	if err == nil || db.Dialect != Postgres || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return !errors.Is(err, sql.ErrNoRows) && !errors.Is(err, sql.ErrTxDone)
	}
	return len(pe.Code) == 5 && (pe.Code[:2] == "08" || pe.Code[:2] == "57")
}

// password matches a password given as a parameter, in a URL's query or
// as a keyword/value pair (quoted or not).
var password = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&\s]*)`)

// Redact returns spec with its password hidden, for messages. A URL's
// userinfo ends at its last '@': a password written unescaped may hold
// '@', '/', '?' or '#', and what follows the user's ':' up to there is
// hidden.
func Redact(spec string) string {
	spec = password.ReplaceAllString(spec, "${1}xxxxx")
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return text.Clip(spec, 200)
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return text.Clip(spec, 200)
	}
	if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
		return text.Clip(scheme+"://"+user+":xxxxx"+rest[at:], 200)
	}
	return text.Clip(spec, 200)
}
