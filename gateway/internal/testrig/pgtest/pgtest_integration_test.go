//go:build integration

package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestNewDatabase: each test gets an empty database of its own on the
// shared server, and dropping it at cleanup leaves the others alone.
func TestNewDatabase(t *testing.T) {
	a, b := NewDatabase(t), NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	ca, cb := connect(t, a), connect(t, b)
	if _, err := ca.Exec(t.Context(), "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := ca.QueryRow(t.Context(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if _, err := cb.Exec(t.Context(), "SELECT * FROM t"); err == nil {
		t.Fatal("the second database sees the first one's table")
	}
}

// TestStartStopRestart: a server of one's own refuses connections while
// stopped and keeps its data across a restart, on the same URL.
func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	c := connect(t, s.DSN())
	if _, err := c.Exec(t.Context(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	if c2, err := pgx.Connect(t.Context(), s.DSN()); err == nil {
		c2.Close(context.Background())
		t.Fatal("connected to a stopped server")
	}
	s.Restart(t)
	var x int
	if err := connect(t, s.DSN()).QueryRow(t.Context(), "SELECT x FROM kept").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after restart: %d, %v", x, err)
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5/postgres?sslmode=disable": "postgres://u@h:5/db1?sslmode=disable",
		"postgresql://h/": "postgresql://h/db1",
		"host=h user=u":   "host=h user=u dbname=db1",
	} {
		if got := withDatabase(in, "db1"); got != want {
			t.Errorf("withDatabase(%q) = %q, want %q", in, got, want)
		}
	}
}
