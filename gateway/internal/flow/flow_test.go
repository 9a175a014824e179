package flow_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/flow"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/hints"
)

func newTracker(t *testing.T, o flow.Options) *flow.Tracker {
	t.Helper()
	s := state.NewMemory(nil)
	t.Cleanup(func() { s.Close() })
	o.Flows = s.Flows
	tr, err := flow.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func result(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "_meta": map[string]any{"k": awsKey}})
	return b
}

// TestTracker: a secret found in a result of any sensitivity is
// remembered, other candidates only from the tracker's sensitivity up;
// arguments carry a value whole or as a token of a longer string; other
// scopes see nothing.
func TestTracker(t *testing.T) {
	tr := newTracker(t, flow.Options{})
	ctx := context.Background()
	src := state.FlowSource{Upstream: "fs", Tool: "fs__read_text_file", Call: 1}
	scope := flow.Scope("alice", "")
	// A GitHub token in a public result: the detectors find it.
	if err := tr.Record(ctx, scope, src, result("GITHUB_TOKEN="+githubPAT), hints.SensitivityPublic); err != nil {
		t.Fatal(err)
	}
	// A key the detectors do not know, internal: not remembered.
	if err := tr.Record(ctx, scope, src, result("id=QWxhZGRpbjpvcGVu42"), hints.SensitivityInternal); err != nil {
		t.Fatal(err)
	}
	// The same kind of value, restricted: remembered.
	if err := tr.Record(ctx, scope, src, result("id=Zm9vYmFyYmF6cXV4777"), hints.SensitivityRestricted); err != nil {
		t.Fatal(err)
	}
	check := func(scope string, args map[string]any) bool {
		t.Helper()
		got, ok, err := tr.Check(ctx, scope, args)
		if err != nil {
			t.Fatal(err)
		}
		if ok && got != src {
			t.Errorf("source %+v, want %+v", got, src)
		}
		return ok
	}
	for _, args := range []map[string]any{
		{"query": "INSERT INTO t VALUES ('" + githubPAT + "')"},
		{"nested": []any{map[string]any{"v": githubPAT}}},
		{"body": "see Zm9vYmFyYmF6cXV4777 here"},
	} {
		if !check(scope, args) {
			t.Errorf("%v: not found", args)
		}
	}
	for _, args := range []map[string]any{
		{"body": "see QWxhZGRpbjpvcGVu42"}, // internal, no secret
		{"k": awsKey},                      // only under _meta
		{"query": "SELECT 1"},
	} {
		if check(scope, args) {
			t.Errorf("%v: found", args)
		}
	}
	if check(flow.Scope("alice", "another session"), map[string]any{"v": githubPAT}) || check(flow.Scope("bob", ""), map[string]any{"v": githubPAT}) {
		t.Error("another scope carries alice's value")
	}
}

// TestTrackerKeyed: two trackers with one secret over one store (two
// replicas) find each other's values; with another secret they do not.
func TestTrackerKeyed(t *testing.T) {
	s := state.NewMemory(nil)
	defer s.Close()
	ctx := context.Background()
	mk := func(secret string) *flow.Tracker {
		tr, err := flow.New(flow.Options{Flows: s.Flows, Secret: []byte(secret)})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b, c := mk("one secret of at least some bytes"), mk("one secret of at least some bytes"), mk("another secret")
	src := state.FlowSource{Upstream: "fs", Tool: "read", Call: 1}
	if err := a.Record(ctx, "p", src, result(stripeKey), hints.SensitivityRestricted); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Check(ctx, "p", map[string]any{"k": stripeKey}); !ok {
		t.Error("a replica with the same secret did not find the value")
	}
	if _, ok, _ := c.Check(ctx, "p", map[string]any{"k": stripeKey}); ok {
		t.Error("a tracker with another secret found the value")
	}
}
