//go:build integration

package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestServer: a server of the test's own goes away when stopped and comes
// back on the same address, empty, or with its data when it persists.
func TestServer(t *testing.T) {
	for _, persist := range []bool{false, true} {
		srv := redistest.Start(t, &redistest.ServerOptions{Persist: persist})
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		srv.Stop(t)
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatalf("persist %v: a stopped server answered", persist)
		}
		srv.Restart(t)
		var got int64
		for { // the first command may meet the connection the stop closed
			n, err := c.Exists(ctx, "k").Result()
			if err == nil {
				got = n
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("persist %v: after the restart: %v", persist, err)
			}
		}
		if want := map[bool]int64{false: 0, true: 1}[persist]; got != want {
			t.Errorf("persist %v: the key exists %d times after the restart, want %d", persist, got, want)
		}
	}
}

// TestShared: Addr gives every test of a binary the same server.
func TestShared(t *testing.T) {
	if a, b := redistest.Addr(t), redistest.Addr(t); a != b || a == "" {
		t.Fatalf("addresses %q %q", a, b)
	}
}
