package sqlstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/approval/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/hints"
)

var t0 = time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)

// kinds opens each store kind afresh; reopen closes and opens the same
// database again, as a restarted process does.
type kind struct {
	name string
	// open returns a store, and a function that opens another on the
	// same database (closing none).
	open   func(t *testing.T) (s approval.Store, another func() approval.Store)
	shared bool // two opens of the same database are two replicas
}

func openSpec(t *testing.T, spec string, o *sqlstore.Options) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), spec, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// kinds returns the memory and SQLite stores, and PostgreSQL in the
// integration build (one database for all of t's subtests).
func kinds(t *testing.T) []kind {
	sqlKind := func(name string, spec func(t *testing.T) string) kind {
		return kind{name: name, shared: true, open: func(t *testing.T) (approval.Store, func() approval.Store) {
			sp := spec(t)
			o := &sqlstore.Options{MaxOpen: 3, MaxRequests: 64}
			return openSpec(t, sp, o), func() approval.Store { return openSpec(t, sp, o) }
		}}
	}
	ks := []kind{
		{name: "memory", open: func(t *testing.T) (approval.Store, func() approval.Store) {
			s := approval.NewMemStore(&approval.MemOptions{MaxOpen: 3, MaxRequests: 64})
			return s, func() approval.Store { return s }
		}},
		sqlKind("sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "approvals.db") }),
	}
	for name, spec := range postgresSpecs(t, "") {
		ks = append(ks, sqlKind(name, func(*testing.T) string { return spec }))
	}
	return ks
}

var seq atomic.Int64

func request(principal, path string, created time.Time) *approval.Request {
	b := make([]byte, 16) // the last byte's low bits are 0, as strict base64 wants
	n, now := seq.Add(1), time.Now().UnixNano()
	for i := range 7 {
		b[i], b[7+i] = byte(n>>(8*i)), byte(now>>(8*i))
	}
	id := base64URL(b)
	return &approval.Request{
		ID: id, Key: approval.Key{Principal: principal, Server: "files", Tool: "manage_files", ArgsDigest: "sha256:" + path},
		Effect: hints.EffectDelete, Reason: "deletes " + path,
		Args:    []approval.Arg{{Name: "path", Value: path}, {Name: "token", Withheld: true}},
		Created: created, Expires: created.Add(10 * time.Minute),
	}
}

// TestStores holds every kind of store to approval.Store's contract, with
// explicit times.
func TestStores(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, another := k.open(t)
			reopen := func() approval.Store {
				if c, ok := s.(*sqlstore.Store); ok {
					c.Close()
				}
				return another()
			}

			// Open: one open request per key.
			r := request("alice", "/a", t0)
			got, created, err := s.Open(ctx, r, t0)
			if err != nil || !created || got.State != approval.Pending || got.ID != r.ID {
				t.Fatalf("Open = %+v, %v, %v", got, created, err)
			}
			again, created, err := s.Open(ctx, request("alice", "/a", t0.Add(time.Second)), t0.Add(time.Second))
			if err != nil || created || again.ID != r.ID {
				t.Errorf("a second Open of the key = %+v, created %v, %v; want the first", again, created, err)
			}
			if _, err := s.Get(ctx, "AAAAAAAAAAAAAAAAAAAAAA", t0); !errors.Is(err, approval.ErrNotFound) {
				t.Errorf("Get of an unknown id: %v", err)
			}

			// Decide once; Consume once.
			at := t0.Add(time.Minute)
			by := approval.Approver{Principal: "alice", Name: "Alice"}
			d, err := s.Decide(ctx, r.ID, approval.Decision{Approve: true, By: by, At: at, UseBy: at.Add(5 * time.Minute)})
			if err != nil || d.State != approval.Approved || d.DecidedBy != by || !d.Decided.Equal(at) || !d.Expires.Equal(at.Add(5*time.Minute)) {
				t.Fatalf("Decide = %+v, %v", d, err)
			}
			if d, err := s.Decide(ctx, r.ID, approval.Decision{By: by, At: at}); !errors.Is(err, approval.ErrNotPending) || d == nil || d.State != approval.Approved {
				t.Errorf("a second Decide = %+v, %v; want ErrNotPending with the approval", d, err)
			}
			s = reopen() // what was decided outlives the process
			used, err := s.Consume(ctx, r.ID, at.Add(time.Second))
			if err != nil || used.State != approval.Used || !used.UsedAt.Equal(at.Add(time.Second)) {
				t.Fatalf("Consume = %+v, %v", used, err)
			}
			if _, err := s.Consume(ctx, r.ID, at.Add(2*time.Second)); !errors.Is(err, approval.ErrUsed) {
				t.Errorf("a second Consume: %v, want ErrUsed", err)
			}
			g, err := s.Get(ctx, r.ID, at.Add(time.Hour))
			if err != nil || g.State != approval.Used || len(g.Args) != 2 || !g.Args[1].Withheld || g.Reason != "deletes /a" || g.Effect != hints.EffectDelete || !g.Created.Equal(t0) {
				t.Errorf("Get after use = %+v, %v", g, err)
			}
			// The key is free again: a new request.
			if n, created, err := s.Open(ctx, request("alice", "/a", at.Add(3*time.Second)), at.Add(3*time.Second)); err != nil || !created || n.ID == r.ID {
				t.Errorf("Open after use = %+v, %v, %v; want a new request", n, created, err)
			}

			// Pending is not approved; an approval lapses; a denial answers until expiry.
			p := request("bob", "/p", t0)
			if _, _, err := s.Open(ctx, p, t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Consume(ctx, p.ID, t0); !errors.Is(err, approval.ErrNotApproved) {
				t.Errorf("Consume of a pending request: %v", err)
			}
			if _, err := s.Decide(ctx, p.ID, approval.Decision{Approve: true, At: t0, UseBy: t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Consume(ctx, p.ID, t0.Add(time.Minute)); !errors.Is(err, approval.ErrExpired) {
				t.Errorf("Consume at UseBy: %v, want ErrExpired", err)
			}
			q := request("bob", "/q", t0)
			s.Open(ctx, q, t0)
			if d, err := s.Decide(ctx, q.ID, approval.Decision{Approve: false, At: t0, UseBy: t0.Add(time.Minute)}); err != nil || d.State != approval.Denied || !d.Expires.Equal(q.Expires) {
				t.Errorf("Deny = %+v, %v; want denied with its expiry kept", d, err)
			}
			if o, created, _ := s.Open(ctx, request("bob", "/q", t0.Add(time.Minute)), t0.Add(time.Minute)); created || o.ID != q.ID || o.State != approval.Denied {
				t.Errorf("a retry of a denied call opened %+v (created %v); want the denial", o, created)
			}
			if o, created, _ := s.Open(ctx, request("bob", "/q", q.Expires), q.Expires); !created || o.ID == q.ID {
				t.Errorf("a retry after the denial's expiry = %+v; want a new request", o)
			}
			x := request("carol", "/x", t0)
			s.Open(ctx, x, t0)
			if d, err := s.Decide(ctx, x.ID, approval.Decision{Approve: true, At: x.Expires}); !errors.Is(err, approval.ErrNotPending) || d.State != approval.Expired {
				t.Errorf("Decide at expiry = %+v, %v", d, err)
			}

			// Bounds: three open requests per principal (as configured).
			for i := range 3 {
				if _, _, err := s.Open(ctx, request("dave", fmt.Sprint("/d", i), t0), t0); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := s.Open(ctx, request("dave", "/d9", t0), t0); !errors.Is(err, approval.ErrFull) {
				t.Errorf("a fourth open request: %v, want ErrFull", err)
			}

			// List: newest first, one principal or all, limited.
			l, err := s.List(ctx, approval.ListFilter{Principal: "bob"}, t0.Add(time.Hour))
			if err != nil || len(l) != 3 {
				t.Fatalf("List(bob) = %d, %v", len(l), err)
			}
			for i := 1; i < len(l); i++ {
				if l[i].Created.After(l[i-1].Created) {
					t.Errorf("List not newest first: %v then %v", l[i-1].Created, l[i].Created)
				}
			}
			if l, _ := s.List(ctx, approval.ListFilter{All: true, Limit: 2}, t0); len(l) != 2 {
				t.Errorf("List(all, 2) = %d requests", len(l))
			}
		})
	}
}

// TestRaces: many callers racing for one request (decide, use, open the
// same key) on two stores over one database: exactly one wins each race.
func TestRaces(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, another := k.open(t)
			b := another() // a second pool on the same database: another replica
			stores := []approval.Store{a, b}
			race := func(f func(s approval.Store) error) (wins int) {
				var wg sync.WaitGroup
				var n atomic.Int32
				for i := range 16 {
					wg.Go(func() {
						if f(stores[i%2]) == nil {
							n.Add(1)
						}
					})
				}
				wg.Wait()
				return int(n.Load())
			}
			for round := range 5 {
				path := fmt.Sprint("/race", round)
				var opened atomic.Int32
				if wins := race(func(s approval.Store) error {
					_, created, err := s.Open(ctx, request(fmt.Sprint("erin", round), path, t0), t0)
					if created {
						opened.Add(1)
					}
					return err
				}); wins != 16 || opened.Load() != 1 {
					t.Fatalf("Open race: %d succeeded, %d created; want 16 and 1", wins, opened.Load())
				}
				r, _, _ := a.Open(ctx, request(fmt.Sprint("erin", round), path, t0), t0)
				var i atomic.Int32
				if wins := race(func(s approval.Store) error {
					_, err := s.Decide(ctx, r.ID, approval.Decision{Approve: i.Add(1)%2 == 0, At: t0, UseBy: t0.Add(time.Minute)})
					return err
				}); wins != 1 {
					t.Errorf("Decide race: %d decisions, want 1", wins)
				}
				if got, _ := b.Get(ctx, r.ID, t0); got.State != approval.Approved {
					continue // denied: nothing to use
				}
				if wins := race(func(s approval.Store) error {
					_, err := s.Consume(ctx, r.ID, t0.Add(time.Second))
					return err
				}); wins != 1 {
					t.Errorf("Consume race: %d uses, want 1", wins)
				}
			}
		})
	}
}

// TestOpenErrors: a bad spec is refused, and no message repeats a password.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ spec, want string }{
		{"approvals.db", "want sqlite:PATH or postgres://"},
		{"sqlite:", "write sqlite:PATH, a file path"},
		{"sqlite:" + filepath.Join(t.TempDir(), "missing", "dir", "a.db"), "sqlite"},
		{"postgres://user:hunter2@[::1", "not a PostgreSQL URL"},
		{"postgres://user:hunter2@127.0.0.1:1/db?connect_timeout=5", "approval store: postgres at 127.0.0.1:1"},
	} {
		s, err := sqlstore.Open(ctx, tc.spec, nil)
		if err == nil {
			s.Close()
			t.Errorf("%q: opened", tc.spec)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want %q (and no password)", tc.spec, err, tc.want)
		}
	}
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// legacy returns a database of each kind as the store before versioned
// migrations left it (testdata/README.md).
func legacy(t *testing.T) map[string]string {
	path := filepath.Join(t.TempDir(), "approvals.db")
	b, err := os.ReadFile("testdata/legacy.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"sqlite": "sqlite:" + path}
	maps.Copy(out, postgresSpecs(t, "testdata/legacy-postgres.sql"))
	return out
}

// TestUpgrade: a database whose table was created unversioned is adopted
// in place: its version is recorded, its requests read back and go on
// (an approved one is used), and opening again changes nothing.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	for name, spec := range legacy(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for i := range 2 {
				s := openSpec(t, spec, nil)
				rs, err := s.List(ctx, approval.ListFilter{All: true}, now)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rs {
					got = append(got, fmt.Sprintf("%s %s %s %s %s %v", r.ID, r.State, r.DecidedBy.Name, r.ArgsDigest, r.Created.Format(time.TimeOnly), r.Args))
				}
				want := []string{
					"legacyApproval2222222A denied Carol sha256:/tmp/c 10:00:02 [{path /tmp/c false false []} {token  false true []}]",
					"legacyApproval1111111A approved Carol sha256:/tmp/b 10:00:01 [{path /tmp/b false false []} {token  false true []}]",
					"legacyApproval0000000A pending  sha256:/tmp/a 10:00:00 [{path /tmp/a false false []} {token  false true []}]",
				}
				if i == 1 {
					want[1] = strings.Replace(want[1], "approved", "used", 1)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("open %d: the requests:\n%s\nwant\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if i == 0 {
					if _, err := s.Consume(ctx, "legacyApproval1111111A", now); err != nil {
						t.Errorf("using the approval given before the upgrade: %v", err)
					}
				}
				s.Close()
			}
			if got := versions(t, spec, "goose_approvals"); !slices.Equal(got, []int64{0, 1}) {
				t.Errorf("goose_approvals holds versions %v, want [0 1]", got)
			}
		})
	}
}

// versions returns the versions recorded in table, in the order recorded.
func versions(t *testing.T, spec, table string) []int64 {
	db, err := sqldb.Open(t.Context(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Read.QueryContext(t.Context(), "SELECT version_id FROM "+table+" ORDER BY id")
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
