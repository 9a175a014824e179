//go:build integration

package vault_test

import (
	"context"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
	"golang.org/x/oauth2"
)

// TestRefreshWaitsForTheLock: on PostgreSQL, a replica that comes to
// refresh a row while another refreshes it waits for the row's lock, then
// finds the new token.
func TestRefreshWaitsForTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := pgtest.NewDatabase(t)
	clk := newClock()
	a := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
	b := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
	if err := a.Put(ctx, connection("alice", "files", "old", clk.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, spec)
	r := &refresher{now: clk.Now}
	type result struct {
		c   *vault.Connection
		err error
	}
	bDone := make(chan result, 1)
	_, err := a.Refresh(ctx, "alice", "files", time.Minute, func(ctx context.Context, c *vault.Connection) (*oauth2.Token, error) {
		go func() {
			c, err := b.RefreshUnderLock(context.Background(), "alice", "files", time.Minute, r.refresh)
			bDone <- result{c, err}
		}()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for { // until b waits for the lock a holds
			var waiting int
			if err := db.Read.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'").Scan(&waiting); err != nil {
				return nil, err
			}
			if waiting > 0 {
				break
			}
			select {
			case res := <-bDone:
				bDone <- res
				t.Error("the other replica did not wait for the lock")
				return r.refresh(ctx, c)
			case <-tick.C:
			}
		}
		return r.refresh(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	res := <-bDone
	if res.err != nil || res.c.Token.AccessToken != "new" {
		t.Errorf("the other replica got %+v, %v", res.c, res.err)
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("the refresh function ran %d times, want once", n)
	}
}
