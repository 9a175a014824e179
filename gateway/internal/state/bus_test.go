package state_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// TestBus: the same contract from the in-process bus and Redis pub/sub.
func TestBus(t *testing.T) {
	// Not parallel: it counts goroutines.
	for _, d := range deployments() {
		t.Run(d.name, func(t *testing.T) {
			t.Run("across replicas", func(t *testing.T) { testDelivery(t, d) })
			t.Run("wait", func(t *testing.T) { testWait(t, d) })
			t.Run("slow subscriber", func(t *testing.T) { testSlowSubscriber(t, d) })
			t.Run("ending", func(t *testing.T) { testEnding(t, d) })
			t.Run("bounds", func(t *testing.T) { testBusBounds(t, d) })
		})
	}
}

// testDelivery: a message published on one replica reaches every
// subscriber of its topic on the others, and no other topic's.
func testDelivery(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	a1, cancel1, err := r[0].Bus.Subscribe(ctx, "approval:1")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel1()
	a2, cancel2, _ := r[0].Bus.Subscribe(ctx, "approval:1")
	defer cancel2()
	other, cancel3, _ := r[1].Bus.Subscribe(ctx, "approval:2")
	defer cancel3()
	if got := r[0].Bus.Stats().Subscriptions; got < 2 {
		t.Errorf("%d subscriptions", got)
	}
	payload := []byte("approved by alice")
	if err := r[1].Bus.Publish(ctx, "approval:1", payload); err != nil {
		t.Fatal(err)
	}
	payload[0] = 'X' // the bus kept its own copy
	if err := r[1].Bus.Publish(ctx, "approval:2", []byte("second")); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan state.Message{a1, a2} {
		m := receive(t, ch)
		if m.Topic != "approval:1" || string(m.Payload) != "approved by alice" || m.Gap {
			t.Errorf("got %+v", m)
		}
	}
	// Messages on one topic arrive in order, so the first message seen on
	// approval:2 is the second published: approval:1's did not reach it.
	if m := receive(t, other); string(m.Payload) != "second" {
		t.Errorf("approval:2 got %+v", m)
	}
}

// testWait: Wait subscribes before it checks, so a change made and
// published between its first check and its waiting is not missed. The
// check itself makes that change the first time it runs, the moment a
// waiter that checked before subscribing would lose.
func testWait(t *testing.T, d deployment) {
	r := d.replicas(t, 2, nil)
	ctx := bounded(t)
	var approved atomic.Bool
	checks := 0
	err := state.Wait(ctx, r[0].Bus, "approval:7", func() (bool, error) {
		checks++
		if checks == 1 {
			done := approved.Load()
			approved.Store(true) // another replica approves...
			if err := r[1].Bus.Publish(ctx, "approval:7", nil); err != nil {
				return false, err
			}
			return done, nil // ...after this check read the state
		}
		return approved.Load(), nil
	})
	if err != nil || checks != 2 {
		t.Fatalf("wait: %v after %d checks", err, checks)
	}
	// check's error ends the wait.
	boom := errors.New("the approval store is down")
	if err := state.Wait(ctx, r[0].Bus, "approval:8", func() (bool, error) { return false, boom }); err != boom {
		t.Errorf("wait returned %v", err)
	}
	// So does the context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := state.Wait(short, r[0].Bus, "approval:9", func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait past its deadline returned %v", err)
	}
}

// testSlowSubscriber: a subscriber that does not read loses what does not
// fit its buffer, counted; the publisher never blocks, and the others get
// everything.
func testSlowSubscriber(t *testing.T, d deployment) {
	r := d.replicas(t, 2, &state.Options{Buffer: 2})
	ctx := bounded(t)
	slow, cancel1, err := r[0].Bus.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel1()
	fast, cancel2, _ := r[0].Bus.Subscribe(ctx, "t")
	defer cancel2()
	before := r[0].Bus.Stats().Dropped
	for i := range 10 {
		if err := r[1].Bus.Publish(ctx, "t", []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
		if m := receive(t, fast); m.Payload[0] != byte('0'+i) {
			t.Fatalf("fast subscriber got %q, want %d", m.Payload, i)
		}
	}
	eventually(t, "8 drops counted", func() bool { return r[0].Bus.Stats().Dropped-before == 8 })
	for i := range 2 {
		if m := receive(t, slow); m.Payload[0] != byte('0'+i) {
			t.Errorf("slow subscriber got %q, want %d", m.Payload, i)
		}
	}
}

// testEnding: cancel, the context and Close each end a subscription by
// closing its channel, and leave no goroutine behind.
func testEnding(t *testing.T, d deployment) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := d.replicas(t, 1, nil)
	ctx := bounded(t)
	byCancel, cancel, err := r[0].Bus.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	cancel()
	subCtx, endCtx := context.WithCancel(ctx)
	byCtx, cancel2, _ := r[0].Bus.Subscribe(subCtx, "t")
	defer cancel2()
	endCtx()
	byClose, cancel3, _ := r[0].Bus.Subscribe(ctx, "t")
	defer cancel3()
	for name, ch := range map[string]<-chan state.Message{"cancel": byCancel, "context": byCtx} {
		if _, open := <-ch; open {
			t.Errorf("%s: a message instead of the end", name)
		}
	}
	if err := r[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, open := <-byClose; open {
		t.Error("close: a message instead of the end")
	}
	if _, _, err := r[0].Bus.Subscribe(ctx, "t"); !errors.Is(err, state.ErrClosed) {
		t.Errorf("subscribe after close: %v", err)
	}
	if err := r[0].Bus.Publish(ctx, "t", nil); !errors.Is(err, state.ErrClosed) {
		t.Errorf("publish after close: %v", err)
	}
	if err := state.Wait(ctx, r[0].Bus, "t", func() (bool, error) { return false, nil }); !errors.Is(err, state.ErrClosed) {
		t.Errorf("wait after close: %v", err)
	}
}

func testBusBounds(t *testing.T, d deployment) {
	r := d.replicas(t, 1, &state.Options{Subscriptions: 2})
	ctx := bounded(t)
	for _, topic := range []string{"", strings.Repeat("t", state.MaxKeyLen+1)} {
		if _, _, err := r[0].Bus.Subscribe(ctx, topic); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("subscribe to a topic of %d bytes: %v", len(topic), err)
		}
		if err := r[0].Bus.Publish(ctx, topic, nil); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("publish to a topic of %d bytes: %v", len(topic), err)
		}
	}
	if err := r[0].Bus.Publish(ctx, "t", make([]byte, state.MaxPayload+1)); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("publish too much: %v", err)
	}
	for i := range 3 {
		_, cancel, err := r[0].Bus.Subscribe(ctx, "t")
		if i < 2 {
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
		} else if !errors.Is(err, state.ErrFull) {
			t.Errorf("a third subscription with a bound of 2: %v", err)
		}
	}
}
