package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the pure Go SQLite driver, "sqlite"
)

// OpenSQLite opens (creating if needed) the SQLite file at path, in WAL
// mode, waiting up to 5 s for a lock another process holds.
func OpenSQLite(ctx context.Context, path string, o *Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("approval store: sqlite: no file")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate") // a writing transaction takes the lock first, so two never deadlock
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("approval store: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	for _, stmt := range append([]string{createTable}, createIndexes...) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("approval store: sqlite %s: %w", path, err)
		}
	}
	return &Store{db: db, opts: o.withDefaults(), where: "sqlite " + path, rebind: func(q string) string { return q }}, nil
}

// OpenPostgres connects to the PostgreSQL database at dsn
// (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]) and
// creates the table if needed, under an advisory lock so that replicas
// starting together create it once. Every query is bounded by its context.
func OpenPostgres(ctx context.Context, dsn string, o *Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's error may repeat the URL, password included.
		return nil, errors.New("approval store: not a PostgreSQL URL (postgres://USER@HOST[:PORT]/DATABASE)")
	}
	where := "postgres at " + cfg.Host
	if cfg.Port != 0 {
		where += ":" + strconv.Itoa(int(cfg.Port))
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: db, opts: o.withDefaults(), where: where, rebind: rebindDollar,
		lockPrincipal: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"}
	err = func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", Table); err != nil {
			return err
		}
		for _, stmt := range append([]string{createTable}, createIndexes...) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("approval store (%s): %w", where, err)
	}
	return s, nil
}

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
