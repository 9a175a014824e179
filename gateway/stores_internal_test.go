package gateway

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The stores are pinged at most once per storeHealthTTL, each within
// storePingTimeout: /healthz cannot be used to hammer them, and a store
// that hangs does not hold the report.
func TestStoreProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pings atomic.Int32
		var down atomic.Bool
		p := &storeProbe{checks: []StoreCheck{
			{Keeps: "state", At: "memory"},
			{Keeps: "audit", At: "postgres at db:5432", FailsClosed: "destructive calls", Ping: func(context.Context) error {
				pings.Add(1)
				if down.Load() {
					return errors.New("dial tcp db:5432: connect: connection refused\n(again)")
				}
				return nil
			}},
			{Keeps: "disclosure", At: "redis at cache:6379", Ping: func(ctx context.Context) error {
				<-ctx.Done() // never answers
				return ctx.Err()
			}},
		}}
		start := time.Now()
		h := p.health()
		if took := time.Since(start); took != storePingTimeout {
			t.Errorf("the report waited %s for a store that hangs, want %s", took, storePingTimeout)
		}
		if len(h) != 3 || !h[0].Up || !h[1].Up || h[2].Up || h[2].Error == "" || h[1].At != "postgres at db:5432" || h[1].FailsClosed != "" {
			t.Fatalf("first report: %+v", h)
		}
		down.Store(true)
		for range 10 {
			if h := p.health(); !h[1].Up {
				t.Fatalf("a report within %s pinged again: %+v", storeHealthTTL, h)
			}
		}
		if n := pings.Load(); n != 1 {
			t.Fatalf("%d pings for 11 reports within %s, want 1", n, storeHealthTTL)
		}
		time.Sleep(storeHealthTTL)
		h = p.health()
		if pings.Load() != 2 || h[1].Up || h[1].Error != "dial tcp db:5432: connect: connection refused (again)" || h[1].FailsClosed != "destructive calls" {
			t.Fatalf("after %s: %d pings, %+v", storeHealthTTL, pings.Load(), h)
		}
	})
}
