package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// deployment makes the stores of one deployment: replicas(t, n) returns n
// stores that share state, as n replicas of a gateway do.
type deployment struct {
	name     string
	replicas func(t testing.TB, n int, opts *state.Options) []*state.Store
}

// deployments are the implementations every conformance suite runs
// against: the in-process store (one process: every "replica" is the same
// store) and, in the integration build, Redis.
func deployments() []deployment {
	return append([]deployment{
		{"memory", func(t testing.TB, n int, opts *state.Options) []*state.Store {
			s := state.NewMemory(opts)
			t.Cleanup(func() { s.Close() })
			out := make([]*state.Store, n)
			for i := range out {
				out[i] = s
			}
			return out
		}},
	}, externalDeployments()...)
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
