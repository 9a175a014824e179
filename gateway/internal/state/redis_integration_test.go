//go:build integration

package state_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

// TestRedisRestart: while Redis is away every operation fails closed with
// an error that says where it is and what the gateway does; after it is
// back the same store works again, without a restart, and refuses every
// nonce issued before: the restart forgot which were used (no
// persistence), and the epoch changed with it.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, nil)
	s := state.NewRedis(newClient(t, srv.Addr()), &state.Options{Prefix: redistest.Prefix(t)})
	defer s.Close()
	ctx := bounded(t)
	used, _ := s.Nonces.Issue(ctx)
	if first, err := s.Nonces.Use(ctx, used, time.Hour); !first || err != nil {
		t.Fatalf("use: %v %v", first, err)
	}
	unused, _ := s.Nonces.Issue(ctx)
	epoch, _ := s.Nonces.Epoch(ctx)

	srv.Stop(t)
	fresh := epoch + ".AAAAAAAAAAAAAAAAAAAAAA"
	first, err := s.Nonces.Use(ctx, fresh, time.Hour)
	checkUnavailable(t, "use", err, srv.Addr(), "single-use confirmations fail closed")
	if first {
		t.Error("a nonce was accepted while Redis was away")
	}
	_, err = s.Nonces.Issue(ctx)
	checkUnavailable(t, "issue", err, srv.Addr(), "single-use confirmations fail closed")
	_, err = s.Nonces.Epoch(ctx)
	checkUnavailable(t, "epoch", err, srv.Addr(), "single-use confirmations fail closed")
	ok, _, err := s.Limiter.Allow(ctx, "k", state.Limit{Rate: 1, Burst: 1})
	checkUnavailable(t, "allow", err, srv.Addr(), "rate-limited calls are refused")
	if ok {
		t.Error("an event was allowed while Redis was away")
	}
	err = s.Bus.Publish(ctx, "t", nil)
	checkUnavailable(t, "publish", err, srv.Addr(), "calls waiting on another replica are not released")
	if err := s.Check(ctx); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("check: %v", err)
	}

	srv.Restart(t)
	// The client dials again by itself: after many failed dials it tries
	// once a second until one succeeds.
	eventually(t, "the store serves again", func() bool {
		_, err := s.Nonces.Use(ctx, used, time.Hour)
		return !errors.Is(err, state.ErrUnavailable)
	})
	for _, n := range []string{used, unused, fresh} {
		if first, err := s.Nonces.Use(ctx, n, time.Hour); first || !errors.Is(err, state.ErrStaleEpoch) {
			t.Errorf("a nonce of the epoch before the restart: %v %v", first, err)
		}
	}
	after, err := s.Nonces.Epoch(ctx)
	if err != nil || after == epoch {
		t.Fatalf("epoch after the restart: %q %v (before: %q)", after, err, epoch)
	}
	n, err := s.Nonces.Issue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if first, err := s.Nonces.Use(ctx, n, time.Hour); first != want || err != nil {
			t.Errorf("use %d after the restart: %v %v", i, first, err)
		}
	}
	if ok, _, err := s.Limiter.Allow(ctx, "k", state.Limit{Rate: 1, Burst: 1}); !ok || err != nil {
		t.Errorf("allow after the restart: %v %v", ok, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("check after the restart: %v", err)
	}
}

func checkUnavailable(t *testing.T, what string, err error, addr, consequence string) {
	t.Helper()
	var ue *state.UnavailableError
	if !errors.Is(err, state.ErrUnavailable) || !errors.As(err, &ue) {
		t.Errorf("%s while Redis is away: %v, want ErrUnavailable", what, err)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "shared state (Redis at "+addr+") unavailable: ") || !strings.Contains(msg, "; "+consequence) {
		t.Errorf("%s: message %q", what, msg)
	}
}

// TestRedisRestartPersisted: a Redis that reloads its data at start still
// changes the epoch (its run_id changed): a snapshot or an append-only
// file may miss the last nonces used, so nothing issued before is
// trusted, even though the used nonce's key came back.
func TestRedisRestartPersisted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, &redistest.ServerOptions{Persist: true})
	c := newClient(t, srv.Addr())
	prefix := redistest.Prefix(t)
	s := state.NewRedis(c, &state.Options{Prefix: prefix})
	defer s.Close()
	ctx := bounded(t)
	n, _ := s.Nonces.Issue(ctx)
	if first, err := s.Nonces.Use(ctx, n, time.Hour); !first || err != nil {
		t.Fatalf("use: %v %v", first, err)
	}
	srv.Stop(t)
	srv.Restart(t)
	if got := c.Exists(ctx, prefix+"{nonce}:"+n).Val(); got != 1 {
		t.Fatalf("the used nonce's key did not survive the restart (EXISTS %d): the server did not persist", got)
	}
	if first, err := s.Nonces.Use(ctx, n, time.Hour); first || !errors.Is(err, state.ErrStaleEpoch) {
		t.Errorf("after a restart that kept the data: %v %v", first, err)
	}
}

// TestRedisFlush: data lost without a restart (FLUSHALL, or the epoch key
// deleted) changes the epoch too.
func TestRedisFlush(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, nil)
	c := newClient(t, srv.Addr())
	s := state.NewRedis(c, &state.Options{Prefix: redistest.Prefix(t)})
	defer s.Close()
	ctx := bounded(t)
	n, _ := s.Nonces.Issue(ctx)
	_, _ = s.Nonces.Use(ctx, n, time.Hour)
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if first, err := s.Nonces.Use(ctx, n, time.Hour); first || !errors.Is(err, state.ErrStaleEpoch) {
		t.Errorf("after FLUSHALL: %v %v", first, err)
	}
}

// TestRedisKeys: keys live under the prefix, expire with their ttl, and
// another prefix is another deployment.
func TestRedisKeys(t *testing.T) {
	t.Parallel()
	c := newClient(t, redistest.Addr(t))
	prefix := redistest.Prefix(t)
	s := state.NewRedis(c, &state.Options{Prefix: prefix})
	defer s.Close()
	ctx := bounded(t)
	n, _ := s.Nonces.Issue(ctx)
	_, _ = s.Nonces.Use(ctx, n, 10*time.Minute)
	if ttl := c.PTTL(ctx, prefix+"{nonce}:"+n).Val(); ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("nonce PTTL %v, want about 10m", ttl)
	}
	if ttl := c.PTTL(ctx, prefix+"{nonce}:epoch").Val(); ttl != -1 {
		t.Errorf("epoch PTTL %v, want none (-1)", ttl)
	}
	_, _, _ = s.Limiter.Allow(ctx, "alice", state.Limit{Rate: 0.1, Burst: 3})
	if ttl := c.PTTL(ctx, prefix+"limit:alice").Val(); ttl <= 9*time.Second || ttl > 10*time.Second {
		t.Errorf("limiter PTTL %v, want one interval (10s): the bucket is full again then", ttl)
	}
	if keys := c.Keys(ctx, prefix+"*").Val(); len(keys) != 3 {
		t.Errorf("keys under the prefix: %q", keys)
	}
}

// TestBusResubscribe: a subscription outlives a Redis restart. While Redis
// is away publishing fails; when it is back the subscription is renewed
// and its subscribers get a Gap (what was published meanwhile is lost),
// then every message published after.
func TestBusResubscribe(t *testing.T) {
	// Not parallel: it waits on short timers (a health interval, a
	// debounce) that a loaded machine must not stretch.
	srv := redistest.Start(t, nil)
	prefix := redistest.Prefix(t)
	a := state.NewRedis(newClient(t, srv.Addr()), &state.Options{Prefix: prefix})
	defer a.Close()
	b := state.NewRedis(newClient(t, srv.Addr()), &state.Options{Prefix: prefix})
	defer b.Close()
	ctx := bounded(t)
	msgs, cancel, err := a.Bus.Subscribe(ctx, "approval:1")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	srv.Stop(t)
	checkUnavailable(t, "publish", b.Bus.Publish(ctx, "approval:1", []byte("lost")), srv.Addr(), "calls waiting on another replica are not released")
	srv.Restart(t)
	if m := receive(t, msgs); !m.Gap {
		t.Fatalf("first message after the restart: %+v, want a gap", m)
	}
	if err := b.Bus.Publish(ctx, "approval:1", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs); string(m.Payload) != "after" || m.Gap {
		t.Fatalf("after the restart: %+v", m)
	}
	if s := a.Bus.Stats(); s.Gaps != 1 {
		t.Errorf("stats %+v", s)
	}
	// A subscription made while Redis is away is refused once the
	// timeout passes.
	srv.Stop(t)
	short := state.NewRedis(newClient(t, srv.Addr()), &state.Options{Prefix: prefix, SubscribeTimeout: 200 * time.Millisecond})
	defer short.Close()
	_, _, err = short.Bus.Subscribe(ctx, "approval:2")
	checkUnavailable(t, "subscribe", err, srv.Addr(), "calls waiting on another replica are not released")
	if n := short.Bus.Stats().Subscriptions; n != 0 {
		t.Errorf("a refused subscription is still counted: %d", n)
	}
	srv.Restart(t)
}

// TestWaitAcrossRestart: a call waits on one replica; the approval is
// given (in the durable store) while Redis is away, so its notification
// cannot be sent; once Redis is back the waiting call is released anyway.
func TestWaitAcrossRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, nil)
	prefix := redistest.Prefix(t)
	a := state.NewRedis(newClient(t, srv.Addr()), &state.Options{Prefix: prefix})
	defer a.Close()
	ctx := bounded(t)
	var approved atomic.Bool
	checked := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() {
		done <- state.Wait(ctx, a.Bus, "approval:3", func() (bool, error) {
			checked <- struct{}{}
			return approved.Load(), nil
		})
	}()
	<-checked // subscribed and checked once
	srv.Stop(t)
	approved.Store(true)
	srv.Restart(t)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// TestBusStalledConnection: a subscription connection that stops
// answering without closing (a network that drops packets) is replaced
// after a health interval without an answer to a PING; its subscribers
// get a Gap, then the messages published after.
func TestBusStalledConnection(t *testing.T) {
	// Not parallel: it waits on short timers (a health interval, a
	// debounce) that a loaded machine must not stretch.
	p := newProxy(t, redistest.Addr(t))
	prefix := redistest.Prefix(t)
	a := state.NewRedis(newClient(t, p.addr()), &state.Options{Prefix: prefix, HealthInterval: 50 * time.Millisecond})
	defer a.Close()
	b := state.NewRedis(newClient(t, redistest.Addr(t)), &state.Options{Prefix: prefix})
	defer b.Close()
	ctx := bounded(t)
	msgs, cancel, err := a.Bus.Subscribe(ctx, "approval:4")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	p.freeze() // every connection open now goes silent
	if err := b.Bus.Publish(ctx, "approval:4", []byte("lost")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs); !m.Gap {
		t.Fatalf("first message after the stall: %+v, want a gap", m)
	}
	if err := b.Bus.Publish(ctx, "approval:4", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs); string(m.Payload) != "after" {
		t.Fatalf("after the stall: %+v", m)
	}
}

// TestUnavailableMessage: the words a person reads.
func TestUnavailableMessage(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	s := state.NewRedis(c, nil)
	defer s.Close()
	_, err := s.Nonces.Use(context.Background(), "AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", time.Minute)
	want := "shared state (Redis at 127.0.0.1:1) unavailable: dial tcp 127.0.0.1:1: connect: connection refused; single-use confirmations fail closed until it is back"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// The caller's own cancellation is not unavailability.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Nonces.Use(ctx, "AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", time.Minute); !errors.Is(err, context.Canceled) || errors.Is(err, state.ErrUnavailable) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestCheck: Check refuses a Redis that may evict keys, since an evicted
// nonce could be replayed.
func TestCheck(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, nil)
	c := newClient(t, srv.Addr())
	s := state.NewRedis(c, nil)
	defer s.Close()
	ctx := bounded(t)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "100mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "set maxmemory-policy noeviction") {
		t.Errorf("check with volatile-lru: %v", err)
	}
	if err := state.NewMemory(nil).Check(ctx); err != nil {
		t.Errorf("memory check: %v", err)
	}
}

// TestOpen: a Redis URL makes a Redis store with keys under the prefix
// asked for, whose Close closes its client; without a URL the store is in
// memory; a URL that is not a Redis URL is refused without repeating it.
func TestOpen(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	s, err := state.Open("redis://"+redistest.Addr(t)+"/0", &state.Options{Prefix: prefix + "state:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := bounded(t)
	if got := s.String(); got != "redis at "+redistest.Addr(t) {
		t.Errorf("String %q", got)
	}
	n, err := s.Nonces.Issue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Nonces.Use(ctx, n, time.Minute)
	c := newClient(t, redistest.Addr(t))
	if got := c.Exists(ctx, prefix+"state:{nonce}:"+n).Val(); got != 1 {
		t.Errorf("no nonce key under %sstate:", prefix)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close closed the client the store made.
	if _, err := s.Nonces.Epoch(ctx); err == nil || !strings.Contains(err.Error(), "client is closed") {
		t.Errorf("after close: %v", err)
	}

	if _, err := state.Open("http://"+redistest.Addr(t), nil); err == nil || strings.Contains(err.Error(), redistest.Addr(t)) {
		t.Errorf("a URL that is not Redis's: %v", err)
	}
	m, err := state.Open("", nil)
	if err != nil || m.String() != "memory" {
		t.Fatalf("without redis: %v %v", m, err)
	}
	m.Close()
}

// BenchmarkRedisPing: one round trip to the test's Redis, the floor of
// every Redis operation.
func BenchmarkRedisPing(b *testing.B) {
	c := newClient(b, redistest.Addr(b))
	ctx := context.Background()
	l := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		l.time(func() {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.StopTimer()
	l.report(b)
}
