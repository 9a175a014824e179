package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// deployment makes the stores of one deployment: replicas(t, n) returns n
// stores that share state, as n replicas of a gateway do.
type deployment struct {
	name     string
	replicas func(t testing.TB, n int, opts *state.Options) []*state.Store
}

// deployments are the implementations every conformance suite runs
// against: the in-process store (one process: every "replica" is the same
// store) and Redis (one client per replica, one prefix).
func deployments() []deployment {
	return []deployment{
		{"memory", func(t testing.TB, n int, opts *state.Options) []*state.Store {
			s := state.NewMemory(opts)
			t.Cleanup(func() { s.Close() })
			out := make([]*state.Store, n)
			for i := range out {
				out[i] = s
			}
			return out
		}},
		{"redis", func(t testing.TB, n int, opts *state.Options) []*state.Store {
			o := state.Options{}
			if opts != nil {
				o = *opts
			}
			if o.Prefix == "" {
				o.Prefix = redistest.Prefix(t)
			}
			out := make([]*state.Store, n)
			for i := range out {
				out[i] = state.NewRedis(newClient(t, redistest.Addr(t)), &o)
				t.Cleanup(func() { out[i].Close() })
			}
			return out
		}},
	}
}

// newClient returns a client of the Redis at addr, closed at cleanup
// (after the stores using it, which are closed first).
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// eventually polls cond until it holds, failing t after a bound that only
// a broken implementation reaches.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receive returns the next message of msgs, failing t after a bound.
func receive(t testing.TB, msgs <-chan state.Message) state.Message {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the subscription's channel was closed")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message after 30s")
	}
	return state.Message{}
}

func bounded(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
