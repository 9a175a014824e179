package state_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// TestNonces: the same contract from the in-process store and Redis.
func TestNonces(t *testing.T) {
	t.Parallel()
	for _, d := range deployments() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			t.Run("single use", func(t *testing.T) { testSingleUse(t, d) })
			t.Run("concurrent", func(t *testing.T) { testConcurrentUse(t, d) })
			t.Run("expiry", func(t *testing.T) { testNonceExpiry(t, d) })
			t.Run("epoch", func(t *testing.T) { testEpoch(t, d) })
			t.Run("invalid", func(t *testing.T) { testInvalidNonces(t, d) })
		})
	}
}

func testSingleUse(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	a, err := r[0].Nonces.Issue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r[0].Nonces.Issue(ctx)
	if a == b {
		t.Fatalf("two issues gave the same nonce %q", a)
	}
	for i, want := range []bool{true, false, false} {
		first, err := r[i%2].Nonces.Use(ctx, a, time.Hour)
		if err != nil || first != want {
			t.Fatalf("use %d of a through replica %d: %v %v, want %v", i, i%2, first, err, want)
		}
	}
	if first, err := r[1].Nonces.Use(ctx, b, time.Hour); err != nil || !first {
		t.Fatalf("first use of another nonce: %v %v", first, err)
	}
}

// testConcurrentUse: goroutines on two replicas race to use each nonce;
// exactly one wins each race.
func testConcurrentUse(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	const races, racers = 20, 32
	for range races {
		n, err := r[0].Nonces.Issue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		wins, errs := 0, []error{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				first, err := r[i%2].Nonces.Use(ctx, n, time.Hour)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if first {
					wins++
				}
			})
		}
		close(start)
		wg.Wait()
		if wins != 1 || len(errs) > 0 {
			t.Fatalf("%d racers on two replicas: %d won, errors %v", racers, wins, errs)
		}
	}
}

// testNonceExpiry: a used nonce is refused within its ttl and forgotten
// after it.
func testNonceExpiry(t *testing.T, d deployment) {
	r := d.replicas(t, 1, nil)
	ctx := bounded(t)
	long, _ := r[0].Nonces.Issue(ctx)
	short, _ := r[0].Nonces.Issue(ctx)
	for _, n := range []string{long, short} {
		if first, err := r[0].Nonces.Use(ctx, n, map[string]time.Duration{long: time.Hour, short: 20 * time.Millisecond}[n]); !first || err != nil {
			t.Fatalf("first use: %v %v", first, err)
		}
	}
	time.Sleep(40 * time.Millisecond)
	if first, err := r[0].Nonces.Use(ctx, long, time.Hour); first || err != nil {
		t.Errorf("a nonce used within its ttl: %v %v", first, err)
	}
	if first, err := r[0].Nonces.Use(ctx, short, time.Hour); !first || err != nil {
		t.Errorf("a nonce past its ttl is still remembered: %v %v", first, err)
	}
}

// testEpoch: the epoch is stable and shared, nonces carry it, and a nonce
// of another store's epoch (another gateway process, another deployment)
// is refused.
func testEpoch(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	e0, err := r[0].Nonces.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e1, _ := r[1].Nonces.Epoch(ctx)
	again, _ := r[0].Nonces.Epoch(ctx)
	if e0 != e1 || e0 != again || len(e0) != 22 {
		t.Fatalf("epochs %q %q %q", e0, e1, again)
	}
	n, _ := r[1].Nonces.Issue(ctx)
	if !strings.HasPrefix(n, e0+".") {
		t.Fatalf("nonce %q does not carry epoch %q", n, e0)
	}
	other := d.replicas(t, 1, nil)[0]
	if eo, _ := other.Nonces.Epoch(ctx); eo == e0 {
		t.Fatalf("another store has the same epoch %q", eo)
	}
	first, err := other.Nonces.Use(ctx, n, time.Hour)
	if first || !errors.Is(err, state.ErrStaleEpoch) {
		t.Fatalf("a nonce of another epoch: %v %v", first, err)
	}
	// Refused, not consumed: it is still good where it was issued.
	if first, err := r[0].Nonces.Use(ctx, n, time.Hour); !first || err != nil {
		t.Fatalf("use at home after a refusal elsewhere: %v %v", first, err)
	}
}

func testInvalidNonces(t *testing.T, d deployment) {
	r := d.replicas(t, 1, nil)
	ctx := bounded(t)
	n, _ := r[0].Nonces.Issue(ctx)
	for _, bad := range []string{"", "x", strings.Repeat("a", 45), n[:22] + "!" + n[23:], n[:44] + "*", n + "a"} {
		if first, err := r[0].Nonces.Use(ctx, bad, time.Hour); first || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("Use(%q): %v %v", bad, first, err)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Second, state.MaxNonceTTL + 1} {
		if first, err := r[0].Nonces.Use(ctx, n, ttl); first || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("ttl %v: %v %v", ttl, first, err)
		}
	}
	// None of the refusals consumed it.
	if first, err := r[0].Nonces.Use(ctx, n, time.Nanosecond); !first || err != nil {
		t.Errorf("use after refusals: %v %v", first, err)
	}
}
