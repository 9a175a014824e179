package state_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// TestFlows holds both implementations to one behaviour: a fingerprint
// marked in one scope is found there, from any replica, with its source,
// and nowhere else; calls are counted per scope; a scope keeps its max
// latest fingerprints.
func TestFlows(t *testing.T) {
	t.Parallel()
	for _, d := range deployments() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			stores := d.replicas(t, 2, nil)
			a, b := stores[0].Flows, stores[1].Flows
			ctx := bounded(t)
			for want := int64(1); want <= 3; want++ {
				if n, err := a.Tick(ctx, "alice", time.Hour); n != want || err != nil {
					t.Fatalf("tick: %d %v, want %d", n, err, want)
				}
			}
			if n, err := b.Tick(ctx, "bob", time.Hour); n != 1 || err != nil {
				t.Fatalf("bob's first tick: %d %v", n, err)
			}
			src := state.FlowSource{Upstream: "fs", Tool: "fs__read_text_file", Call: 3}
			if err := a.Mark(ctx, "alice", []string{"f1", "f2"}, src, time.Hour, 3); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := b.Find(ctx, "alice", []string{"zz", "f2"}); !ok || err != nil || got != src {
				t.Fatalf("find from the other replica: %+v %v %v", got, ok, err)
			}
			if _, ok, err := b.Find(ctx, "bob", []string{"f1"}); ok || err != nil {
				t.Fatalf("another scope found alice's fingerprint: %v %v", ok, err)
			}
			later := state.FlowSource{Upstream: "db", Tool: "db__read_query", Call: 4}
			if err := b.Mark(ctx, "alice", []string{"f3", "f4"}, later, time.Hour, 3); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := a.Find(ctx, "alice", []string{"f1"}); ok {
				t.Error("the oldest fingerprint was kept beyond max")
			}
			for _, fp := range []string{"f2", "f3", "f4"} {
				if _, ok, err := a.Find(ctx, "alice", []string{fp}); !ok || err != nil {
					t.Errorf("%s lost: %v", fp, err)
				}
			}
			if got, _, _ := a.Find(ctx, "alice", []string{"f4"}); got != later {
				t.Errorf("source of f4: %+v", got)
			}
		})
	}
}

// TestMemoryFlowsExpireAndBound: fingerprints and call counts lapse after
// their ttl, and the in-process store holds at most FlowCapacity
// fingerprints in all, dropping the oldest.
func TestMemoryFlowsExpireAndBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := state.NewMemory(&state.Options{FlowCapacity: 4})
		defer s.Close()
		f, ctx := s.Flows, context.Background()
		src := state.FlowSource{Upstream: "fs", Tool: "read", Call: 1}
		if _, err := f.Tick(ctx, "p", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := f.Mark(ctx, "p", []string{"old"}, src, time.Hour, 100); err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Minute)
		if err := f.Mark(ctx, "p", []string{"new"}, src, time.Hour, 100); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := f.Find(ctx, "p", []string{"old"}); !ok {
			t.Fatal("forgotten before its ttl")
		}
		time.Sleep(time.Minute)
		if _, ok, _ := f.Find(ctx, "p", []string{"old"}); ok {
			t.Error("found after its ttl")
		}
		if _, ok, _ := f.Find(ctx, "p", []string{"new"}); !ok {
			t.Error("a newer fingerprint expired with the older")
		}
		if n, _ := f.Tick(ctx, "p", time.Hour); n != 1 {
			t.Errorf("the call count after an hour without calls: %d, want 1", n)
		}
		for i := range 6 {
			scope := fmt.Sprint("q", i%3)
			if err := f.Mark(ctx, scope, []string{fmt.Sprint("v", i)}, src, time.Hour, 100); err != nil {
				t.Fatal(err)
			}
		}
		held := 0
		for i := range 6 {
			if _, ok, _ := f.Find(ctx, fmt.Sprint("q", i%3), []string{fmt.Sprint("v", i)}); ok {
				held++
			}
		}
		if _, ok, _ := f.Find(ctx, "p", []string{"new"}); ok {
			t.Error("the oldest fingerprint was kept beyond the capacity")
		}
		if held != 4 {
			t.Errorf("%d of the 6 latest fingerprints held, want the capacity, 4", held)
		}
	})
}
