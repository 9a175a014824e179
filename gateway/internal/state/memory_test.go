package state_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// TestMemoryNonceBound: the in-process set holds at most NonceCapacity
// unexpired nonces. A flood of new ones evicts only expired ones; when
// every entry is unexpired it refuses the new nonce (fail closed) rather
// than forget a used one, which would let it be replayed.
func TestMemoryNonceBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := state.NewMemory(&state.Options{NonceCapacity: 3})
		defer s.Close()
		ctx := context.Background()
		issue := func() string {
			n, err := s.Nonces.Issue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		use := func(n string, ttl time.Duration) (bool, error) { return s.Nonces.Use(ctx, n, ttl) }
		short, a, b := issue(), issue(), issue()
		for n, ttl := range map[string]time.Duration{short: time.Minute, a: time.Hour, b: time.Hour} {
			if first, err := use(n, ttl); !first || err != nil {
				t.Fatalf("use: %v %v", first, err)
			}
		}
		c := issue()
		if first, err := use(c, time.Hour); first || !errors.Is(err, state.ErrFull) {
			t.Fatalf("a fourth nonce in a set of 3 unexpired: %v %v", first, err)
		}
		for _, n := range []string{short, a, b} {
			if first, err := use(n, time.Hour); first || err != nil {
				t.Fatalf("a used nonce after a refusal: %v %v, want remembered", first, err)
			}
		}
		time.Sleep(time.Minute) // short expires
		if first, err := use(c, time.Hour); !first || err != nil {
			t.Fatalf("after one expired: %v %v", first, err)
		}
		for _, n := range []string{a, b, c} {
			if first, err := use(n, time.Hour); first || err != nil {
				t.Errorf("an unexpired nonce was evicted: %v %v", first, err)
			}
		}
		if first, err := use(issue(), time.Hour); first || !errors.Is(err, state.ErrFull) {
			t.Errorf("full again: %v %v", first, err)
		}
	})
}

// TestMemoryLimiterBound: the in-process limiter holds at most
// LimiterKeys keys with state; a key is forgotten when its bucket is
// full again, which frees its place without changing any decision.
func TestMemoryLimiterBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := state.NewMemory(&state.Options{LimiterKeys: 2})
		defer s.Close()
		ctx := context.Background()
		limit := state.Limit{Rate: 1, Burst: 2}
		for _, k := range []string{"a", "b", "a"} {
			if ok, _, err := s.Limiter.Allow(ctx, k, limit); !ok || err != nil {
				t.Fatalf("%s: %v %v", k, ok, err)
			}
		}
		if ok, _, err := s.Limiter.Allow(ctx, "c", limit); ok || !errors.Is(err, state.ErrFull) {
			t.Fatalf("a third key with a bound of 2: %v %v", ok, err)
		}
		if ok, wait, err := s.Limiter.Allow(ctx, "a", limit); ok || err != nil || wait != time.Second {
			t.Fatalf("a's burst is spent: %v %v %v", ok, wait, err)
		}
		time.Sleep(time.Second) // b's bucket is full again; a's is not (it took two)
		if ok, _, err := s.Limiter.Allow(ctx, "c", limit); !ok || err != nil {
			t.Fatalf("c after b was forgotten: %v %v", ok, err)
		}
		if ok, _, err := s.Limiter.Allow(ctx, "a", limit); !ok || err != nil {
			t.Fatalf("a after one interval: %v %v", ok, err)
		}
		if ok, _, _ := s.Limiter.Allow(ctx, "a", limit); ok {
			t.Fatal("a was forgotten before its bucket was full: its state was lost")
		}
	})
}

// TestMemoryRestart: a new in-process store (the gateway restarted) has a
// new epoch, so state sealed by the previous process is refused even
// though its keys still open it.
func TestMemoryRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := state.NewMemory(nil)
	n, _ := before.Nonces.Issue(ctx)
	_, _ = before.Nonces.Use(ctx, n, time.Hour)
	before.Close()
	after := state.NewMemory(nil)
	defer after.Close()
	if first, err := after.Nonces.Use(ctx, n, time.Hour); first || !errors.Is(err, state.ErrStaleEpoch) {
		t.Errorf("a nonce of the previous process: %v %v", first, err)
	}
}
