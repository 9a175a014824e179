package state_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// TestLimiter: the same contract from the in-process limiter and Redis.
func TestLimiter(t *testing.T) {
	t.Parallel()
	for _, d := range deployments() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			t.Run("burst across replicas", func(t *testing.T) { testBurst(t, d) })
			t.Run("refill", func(t *testing.T) { testRefill(t, d) })
			t.Run("invalid", func(t *testing.T) { testInvalidLimits(t, d) })
		})
	}
}

// testBurst: concurrent events on two replicas; exactly Burst are
// allowed, the others are told to wait about one interval, and other keys
// are not affected.
func testBurst(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	limit := state.Limit{Rate: 1.0 / 3600, Burst: 5} // one an hour after the burst
	var mu sync.Mutex
	allowed := 0
	var waits []time.Duration
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ok, wait, err := r[i%2].Limiter.Allow(ctx, "principal:alice", limit)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("allow: %v", err)
			}
			if ok {
				allowed++
			} else {
				waits = append(waits, wait)
			}
		})
	}
	wg.Wait()
	if allowed != 5 {
		t.Fatalf("%d of 20 allowed, want the burst of 5", allowed)
	}
	for _, w := range waits {
		// Denied events are not counted, so each waits for the next
		// interval, less the little time the test took.
		if w <= time.Hour-time.Minute || w > time.Hour {
			t.Errorf("retry after %v, want about an hour", w)
		}
	}
	if ok, _, err := r[1].Limiter.Allow(ctx, "principal:bob", limit); !ok || err != nil {
		t.Errorf("another key: %v %v", ok, err)
	}
}

// testRefill: after waiting as long as a denial said, an event is
// allowed.
func testRefill(t *testing.T, d deployment) {
	r := d.replicas(t, 1, nil)
	ctx := bounded(t)
	limit := state.Limit{Rate: 4, Burst: 1}
	if ok, _, err := r[0].Limiter.Allow(ctx, "k", limit); !ok || err != nil {
		t.Fatalf("first: %v %v", ok, err)
	}
	var wait time.Duration
	for { // a slow machine may let the first interval pass: then take another
		ok, w, err := r[0].Limiter.Allow(ctx, "k", limit)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			wait = w
			break
		}
	}
	if wait <= 0 || wait > 250*time.Millisecond {
		t.Fatalf("retry after %v, want within one interval (250ms)", wait)
	}
	time.Sleep(wait + time.Millisecond)
	if ok, w, err := r[0].Limiter.Allow(ctx, "k", limit); !ok || err != nil {
		t.Fatalf("after waiting %v: %v (retry after %v) %v", wait, ok, w, err)
	}
}

func testInvalidLimits(t *testing.T, d deployment) {
	r := d.replicas(t, 1, nil)
	ctx := bounded(t)
	for _, l := range []state.Limit{{}, {Rate: 1}, {Burst: 1}, {Rate: -1, Burst: 1}, {Rate: 2e6, Burst: 1},
		{Rate: 1e-9, Burst: 1}, {Rate: 1, Burst: 1 << 30}} {
		if ok, _, err := r[0].Limiter.Allow(ctx, "k", l); ok || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("%+v: %v %v", l, ok, err)
		}
	}
	for _, k := range []string{"", strings.Repeat("k", state.MaxKeyLen+1)} {
		if ok, _, err := r[0].Limiter.Allow(ctx, k, state.Limit{Rate: 1, Burst: 1}); ok || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("key of %d bytes: %v %v", len(k), ok, err)
		}
	}
}
