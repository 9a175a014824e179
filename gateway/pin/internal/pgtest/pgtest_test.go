package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			code = 1
		}
	}
	os.Exit(code)
}

// TestServer checks that the server runs, gives each test a database of
// its own, and comes back after a stop.
func TestServer(t *testing.T) {
	ctx := context.Background()
	s := Shared(t)
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	if a == b {
		t.Fatalf("one database twice: %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1: %d, %v", one, err)
	}
	conn.Close(ctx)

	own := Start(t)
	db := own.NewDatabase(t)
	own.Stop()
	if conn, err := pgx.Connect(ctx, db); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	conn.Close(ctx)
}
