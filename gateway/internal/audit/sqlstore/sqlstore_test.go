package sqlstore_test

import (
	"context"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/hints"
)

// open opens a store with the default busy timeout (5s): a write that
// waits for another writer of an SQLite file ends at its context's
// deadline.
func open(ctx context.Context, spec string) (audit.Store, error) {
	return sqlstore.Open(ctx, spec, nil)
}

func sqliteHarness() storetest.Harness {
	return storetest.Harness{
		New:  func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "audit.db") },
		Open: open,
		// Another process holding the file's write lock: writers wait
		// for it, then fail.
		Interruptible: func(t *testing.T) (string, func(), func()) {
			path := filepath.Join(t.TempDir(), "audit.db")
			var db *sql.DB
			var conn *sql.Conn
			stop := func() {
				var err error
				if db, err = sql.Open("sqlite", path); err != nil {
					t.Fatal(err)
				}
				if conn, err = db.Conn(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
					t.Fatal(err)
				}
			}
			start := func() {
				if conn == nil {
					return
				}
				if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
					t.Fatal(err)
				}
				conn.Close()
				db.Close()
				conn, db = nil, nil
			}
			t.Cleanup(start) // if the test stopped before starting again
			return "sqlite:" + path, stop, start
		},
	}
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, sqliteHarness())
}

// specs returns a fresh database of each kind: SQLite, and PostgreSQL in
// the integration build.
func specs(t testing.TB) map[string]string {
	out := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "audit.db")}
	maps.Copy(out, postgresSpecs(t, ""))
	return out
}

func all(t *testing.T, s *sqlstore.Store, f audit.Filter) []*audit.Record {
	t.Helper()
	var out []*audit.Record
	for r, err := range s.Query(t.Context(), f) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestReadOnly: a read-only open neither creates nor migrates a database,
// and reads a migrated one.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	for name, spec := range specs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ro := &sqlstore.Options{ReadOnly: true}
			if _, err := sqlstore.Open(t.Context(), spec, ro); err == nil {
				t.Fatal("opened an empty or missing database read-only")
			}
			if strings.HasPrefix(spec, "sqlite:") {
				if _, err := os.Stat(strings.TrimPrefix(spec, "sqlite:")); err == nil {
					t.Fatal("a read-only open created the file")
				}
			}
			s, err := sqlstore.Open(t.Context(), spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Begin(t.Context(), &audit.Record{Server: "s", Tool: "t", Decision: audit.Allow}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			r, err := sqlstore.Open(t.Context(), spec, ro)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if n := len(all(t, r, audit.Filter{})); n != 1 {
				t.Errorf("%d records, want 1", n)
			}
		})
	}
}

// legacy returns a database of each kind as the stores before versioned
// migrations left it (testdata/README.md).
func legacy(t *testing.T) map[string]string {
	out := map[string]string{}
	for name, file := range map[string]string{"sqlite": "legacy.db", "sqlite, goose version 2": "goose-v2.db"} {
		path := filepath.Join(t.TempDir(), "audit.db")
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = "sqlite:" + path
	}
	maps.Copy(out, postgresSpecs(t, "testdata/legacy-postgres.sql"))
	return out
}

// TestUpgrade: a database of an earlier release is upgraded in place: one
// of the audit's own migrations table has its version recorded in
// goose_audit, one of goose's version 2 (before signedInAs) goes on from
// there; later migrations run,
// the old records read back as they were written (signed in as no one),
// new ones are added after them with every field, and opening again
// changes nothing.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 7, 28, 10, 0, 0, 123456000, time.UTC)
	records := func() []*audit.Record {
		return []*audit.Record{
			{ID: 1, Time: t0, Principal: "alice", Server: "files", Tool: "read_file", Effect: hints.EffectRead, Decision: audit.Allow,
				Reason: "reads", Level: audit.LevelFull, ArgsDigest: "sha256:aa", Args: []byte(`{"path":"/tmp/a"}`),
				Outcome: audit.OutcomeOK, Ended: t0.Add(1500 * time.Microsecond), Latency: 1500 * time.Microsecond},
			{ID: 2, Time: t0.Add(time.Second), Principal: "bob", Server: "files", Tool: "delete_file", Effect: hints.EffectDelete, Destructive: true,
				Decision: audit.Deny, Reason: "denied by rule", Approver: "carol", Level: audit.LevelSummary, ArgsDigest: "sha256:bb",
				Outcome: audit.OutcomeError, Ended: t0.Add(2 * time.Second), Latency: time.Second, Retries: 2,
				Redactions: map[string]int{"aws": 1}, Error: "boom"},
			{ID: 3, Time: t0.Add(3 * time.Second), Principal: "alice", Server: "git", Tool: "push",
				Effect: hints.EffectWrite, Decision: audit.Allow, Level: audit.LevelSummary, ArgsDigest: "sha256:cc", Outcome: audit.OutcomeUnknown},
		}
	}
	for name, spec := range legacy(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := records()
			for i := range 2 {
				s, err := sqlstore.Open(t.Context(), spec, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := all(t, s, audit.Filter{})
				if i == 0 {
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("the old records:\n%s", diff)
					}
					want[2].Outcome, want[2].Ended = audit.OutcomeOK, t0.Add(4*time.Second)
					if err := s.Finish(t.Context(), want[2]); err != nil {
						t.Errorf("finishing the call begun before the upgrade: %v", err)
					}
					id, err := s.Begin(t.Context(), &audit.Record{Time: t0.Add(5 * time.Second), Server: "s", Tool: "t", SignedInAs: "shared", Decision: audit.Allow})
					if err != nil || id != 4 {
						t.Errorf("Begin after the upgrade: %d, %v", id, err)
					}
				} else if len(got) != 4 || !slices.Equal([]int64{got[0].ID, got[2].ID, got[3].ID}, []int64{1, 3, 4}) || got[2].Outcome != audit.OutcomeOK ||
					got[3].SignedInAs != "shared" {
					t.Errorf("after reopening: %+v", got)
				}
				s.Close()
			}
			ro, err := sqlstore.Open(t.Context(), spec, &sqlstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open of the upgraded database: %v", err)
			}
			ro.Close()
			// Version 1 was adopted from audit_migrations, not applied again.
			wantV := map[string][]int64{"sqlite": {0, 1, 2, 3}, "sqlite, goose version 2": {0, 1, 2, 3}, "postgres": {0, 1, 2}}[name]
			if got := versions(t, spec); !slices.Equal(got, wantV) {
				t.Errorf("goose_audit holds versions %v, want %v", got, wantV)
			}
		})
	}
}

// versions returns the versions recorded in goose_audit, in the order
// recorded.
func versions(t *testing.T, spec string) []int64 {
	db, err := sqldb.Open(t.Context(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Read.QueryContext(t.Context(), "SELECT version_id FROM goose_audit ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestWhere(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	for name, spec := range specs(t) {
		s, err := sqlstore.Open(t.Context(), spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i, r := range []*audit.Record{
			{Time: since.Add(-time.Hour), Principal: "alice", Server: "s", Tool: "t", Effect: hints.EffectDelete, Decision: audit.Confirm},
			{Time: since, Principal: "alice", Server: "s", Tool: "t", Effect: hints.EffectDelete, Decision: audit.Allow},
			{Time: since.Add(time.Hour), Principal: "alice", Server: "s", Tool: "u", Effect: hints.EffectRead, Decision: audit.Allow, Outcome: audit.OutcomeOK},
			{Time: since.Add(2 * time.Hour), Principal: "bob", Server: "s", Tool: "t", Effect: hints.EffectDelete, Decision: audit.Allow},
		} {
			if err := s.Write(t.Context(), []*audit.Record{r}); err != nil {
				t.Fatalf("%s: record %d: %v", name, i, err)
			}
		}
		for _, tc := range []struct {
			f    audit.Filter
			want []string // tools and principals, in order
		}{
			{audit.Filter{}, []string{"alice/t", "alice/t", "alice/u", "bob/t"}},
			{audit.Filter{Since: since, Principal: "alice", Effect: hints.EffectDelete, Outcome: audit.OutcomeUnknown, Limit: 5, Newest: true}, []string{"alice/t"}},
			{audit.Filter{Until: since.Add(90 * time.Minute), Server: "s", Decision: audit.Allow, Newest: true, Limit: 1}, []string{"alice/u"}},
			{audit.Filter{Tool: "t", Outcome: audit.OutcomeUnknown, Limit: 2}, []string{"alice/t", "alice/t"}},
		} {
			var got []string
			for _, r := range all(t, s, tc.f) {
				got = append(got, r.Principal+"/"+r.Tool)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: %+v: %v, want %v", name, tc.f, got, tc.want)
			}
		}
	}
}

// TestWriteMany: a write of more records than one statement takes writes
// them all, in order.
func TestWriteMany(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	for name, spec := range specs(t) {
		s, err := sqlstore.Open(t.Context(), spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var rs []*audit.Record
		for i := range 300 {
			rs = append(rs, &audit.Record{Time: t0.Add(time.Duration(i) * time.Second), Server: "s", Tool: strconv.Itoa(i), Decision: audit.Allow, Outcome: audit.OutcomeOK})
		}
		if err := s.Write(t.Context(), rs); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := all(t, s, audit.Filter{})
		if len(got) != 300 || got[0].Tool != "0" || got[299].Tool != "299" || got[299].ID != 300 {
			t.Errorf("%s: %d records", name, len(got))
		}
	}
}

// BenchmarkBeginFinish: a call that must be audited, begun then finished
// (two committed transactions: fsynced, or flushed to the server's WAL).
func BenchmarkBeginFinish(b *testing.B) {
	for name, spec := range specs(b) {
		b.Run(name, func(b *testing.B) {
			s, err := sqlstore.Open(b.Context(), spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.Bench(b, s)
		})
	}
}

// BenchmarkWrite128: the batched write of 128 ended calls.
func BenchmarkWrite128(b *testing.B) {
	for name, spec := range specs(b) {
		b.Run(name, func(b *testing.B) {
			s, err := sqlstore.Open(b.Context(), spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchWrite(b, s, 128)
		})
	}
}

// BenchmarkWriteSQLite: what a record costs by the size of the batch it
// is written in, the writer's group commit at work (one record per
// transaction without it, at low concurrency).
func BenchmarkWriteSQLite(b *testing.B) {
	for _, n := range []int{1, 2, 8, 32, 128} {
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
			s, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "audit.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchWrite(b, s, n)
		})
	}
}
