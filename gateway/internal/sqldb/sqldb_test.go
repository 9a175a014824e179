package sqldb_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
)

// specs returns a new database of each dialect: SQLite, and PostgreSQL
// in the integration build.
func specs(t *testing.T) map[sqldb.Dialect]string {
	out := map[sqldb.Dialect]string{sqldb.SQLite: "sqlite:" + filepath.Join(t.TempDir(), "test.db")}
	maps.Copy(out, postgresSpecs(t))
	return out
}

func open(t *testing.T, spec string, o *sqldb.Options) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(t.Context(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// migrations returns n goose migrations, each creating table tN.
func migrations(prefix string, n int) fstest.MapFS {
	fs := fstest.MapFS{}
	for i := 1; i <= n; i++ {
		name := prefix + string(rune('0'+i))
		fs["00"+string(rune('0'+i))+"_"+name+".sql"] = &fstest.MapFile{
			Data: []byte("-- +goose Up\nCREATE TABLE " + name + " (id INTEGER PRIMARY KEY, v TEXT NOT NULL);\n"),
		}
	}
	return fs
}

func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Read.QueryRowContext(t.Context(), db.Rebind(q), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestMigrate: two stores migrate in one database, each with its version
// table; migrating again is a no-op; a later migration applies; a newer
// schema is refused; a read-only open only checks.
func TestMigrate(t *testing.T) {
	t.Parallel()
	for dialect, spec := range specs(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := open(t, spec, nil)
			a := sqldb.Schema{Migrations: migrations("a", 1), Table: "goose_a"}
			b := sqldb.Schema{Migrations: migrations("b", 2), Table: "goose_b"}
			for range 2 {
				for _, s := range []sqldb.Schema{a, b} {
					if err := db.Migrate(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := db.Write.ExecContext(ctx, db.Rebind("INSERT INTO a1 (id, v) VALUES (?, ?)"), 1, "kept"); err != nil {
				t.Fatal(err)
			}
			if n := count(t, db, "SELECT count(*) FROM goose_b WHERE version_id > 0"); n != 2 {
				t.Errorf("goose_b has %d versions, want 2", n)
			}
			ro := open(t, spec, &sqldb.Options{ReadOnly: true})
			a2 := sqldb.Schema{Migrations: migrations("a", 2), Table: "goose_a"}
			if err := ro.Migrate(ctx, a2); err == nil || !strings.Contains(err.Error(), "older than 2") {
				t.Errorf("read-only open of an old schema: %v", err)
			}
			if err := db.Migrate(ctx, a2); err != nil {
				t.Fatal(err)
			}
			if err := ro.Migrate(ctx, a2); err != nil {
				t.Errorf("read-only open of a current schema: %v", err)
			}
			if n := count(t, db, "SELECT count(*) FROM a1 WHERE v = ?", "kept"); n != 1 {
				t.Errorf("the row before the migration: %d", n)
			}
			var newer *sqldb.NewerError
			if err := db.Migrate(ctx, a); !errors.As(err, &newer) || newer.Have != 2 || newer.Know != 1 || strings.Count(err.Error(), "goose_a") != 1 || !strings.HasSuffix(err.Error(), "upgrade preflight") {
				t.Errorf("a newer schema: %v", err)
			}
		})
	}
}

// TestMigrateLegacy: the versions of a store's own migrations table are
// recorded in the runner's, and only later migrations run.
func TestMigrateLegacy(t *testing.T) {
	t.Parallel()
	for dialect, spec := range specs(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := open(t, spec, nil)
			for _, q := range []string{
				"CREATE TABLE old_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
				"INSERT INTO old_migrations VALUES (1, 'a1')",
				"CREATE TABLE a1 (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
			} {
				if _, err := db.Write.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			s := sqldb.Schema{Migrations: migrations("a", 2), Table: "goose_a", Legacy: "old_migrations"}
			for range 2 {
				if err := db.Migrate(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			if n := count(t, db, "SELECT count(*) FROM goose_a"); n != 3 {
				t.Errorf("goose_a has %d rows, want versions 0, 1 and 2", n)
			}
			count(t, db, "SELECT count(*) FROM a2")
		})
	}
}

// TestMigrateTogetherSQLite: processes opening one SQLite file together
// all open it, migrated once: those that lost the race find the schema
// current.
func TestMigrateTogetherSQLite(t *testing.T) {
	t.Parallel()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	fs := migrations("a", 1)
	fs["002_more.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nALTER TABLE a1 ADD COLUMN w TEXT;\n")}
	fs["003_more.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nALTER TABLE a1 ADD COLUMN x TEXT;\n")}
	s := sqldb.Schema{Migrations: fs, Table: "goose_a"}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		db := open(t, spec, nil)
		wg.Go(func() { errs[i] = db.Migrate(context.Background(), s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	db := open(t, spec, nil)
	count(t, db, "SELECT count(x) FROM a1")
}

// TestOpen refuses what is not a database spec, without a password in the
// message, and a missing SQLite file read-only.
func TestOpen(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"":                             "want sqlite:PATH or postgres://",
		"audit.db":                     "want sqlite:PATH or postgres://",
		"mysql://u:hunter2@h/db":       `"mysql://u:xxxxx@h/db"`,
		"sqlite://audit.db":            "write sqlite:PATH, a file path",
		"sqlite:file:a.db":             "write sqlite:PATH, a file path",
		"host=h password=hunter2":      `"host=h password=xxxxx"`,
		"sqlite:" + t.TempDir() + "/?": "write sqlite:PATH, a file path",
		"postgres://u:hunter2@h:x/db":  "not a PostgreSQL URL",
	} {
		_, err := sqldb.Open(t.Context(), spec, nil)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): %v, want an error containing %q and no password", spec, err, want)
		}
	}
	if _, err := sqldb.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "none.db"), &sqldb.Options{ReadOnly: true}); err == nil {
		t.Error("opened a missing SQLite file read-only")
	}
}

func TestRebind(t *testing.T) {
	t.Parallel()
	for dialect, spec := range specs(t) {
		db := open(t, spec, nil)
		want := map[sqldb.Dialect]string{sqldb.SQLite: "a = ? AND b = ?", sqldb.Postgres: "a = $1 AND b = $2"}[dialect]
		if got := db.Rebind("a = ? AND b = ?"); got != want {
			t.Errorf("%s: Rebind = %q, want %q", dialect, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                         "postgres://u@h/db",
		"postgres://h/db?password=pw&x=1":           "postgres://h/db?password=xxxxx&x=1",
		"sqlite:/var/lib/a.db":                      "sqlite:/var/lib/a.db",
		// Passwords written unescaped, as PostgreSQL's URL parser takes
		// some of them: the userinfo ends at the last '@'.
		"postgres://u:p@ss@h/db":          "postgres://u:xxxxx@h/db",
		"postgres://u:pa/ss@h/db":         "postgres://u:xxxxx@h/db",
		"postgres://u:pa?ss#x@h/db":       "postgres://u:xxxxx@h/db",
		"host=h password = 'a b' user=u":  "host=h password = xxxxx user=u",
		"host=h password='it\\'s' user=u": "host=h password=xxxxx user=u",
	} {
		if got := sqldb.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"postgres://u:se/cret@h/db",
		"postgres://u:se@cret@h/db?pool_max_conns=x",
		"host=h password = 'se cret'",
	} {
		_, err := sqldb.Open(context.Background(), spec, nil)
		if err == nil || strings.Contains(err.Error(), "cret") {
			t.Errorf("Open(%q) = %v, want an error without the password", spec, err)
		}
	}
}
