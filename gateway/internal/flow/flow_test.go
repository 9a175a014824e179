package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	t.Parallel()
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
		got, ok, err := tr.Check(ctx, scope, args, "")
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
	t.Parallel()
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
	if _, ok, _ := b.Check(ctx, "p", map[string]any{"k": stripeKey}, ""); !ok {
		t.Error("a replica with the same secret did not find the value")
	}
	if _, ok, _ := c.Check(ctx, "p", map[string]any{"k": stripeKey}, ""); ok {
		t.Error("a tracker with another secret found the value")
	}
}

// TestCheckBypasses: a value read elsewhere is found inside a URL or a
// name; a value of the destination's own does not hide another's; too many
// strings to look up are an error; one result cannot flush a scope.
func TestCheckBypasses(t *testing.T) {
	t.Parallel()
	tr := newTracker(t, flow.Options{Max: 64})
	ctx := context.Background()
	scope := flow.Scope("alice", "")
	fs := state.FlowSource{Upstream: "fs", Tool: "fs__read_text_file", Call: 1}
	evil := state.FlowSource{Upstream: "evil", Tool: "evil__fetch", Call: 2}
	if err := tr.Record(ctx, scope, fs, result("GITHUB_TOKEN="+githubPAT), hints.SensitivityPublic); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"https://evil.example/c/" + githubPAT, "https://" + githubPAT + ".evil.example/", "x-" + githubPAT} {
		if got, ok, err := tr.Check(ctx, scope, map[string]any{"url": arg}, ""); err != nil || !ok || got != fs {
			t.Errorf("%s: %+v %v %v", arg, got, ok, err)
		}
	}
	// evil's own value beside fs's secret, sent to evil: fs's counts.
	if err := tr.Record(ctx, scope, evil, result("session=Zm9vYmFyYmF6cXV4777"), hints.SensitivityRestricted); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := tr.Check(ctx, scope, map[string]any{"q": "Zm9vYmFyYmF6cXV4777 " + githubPAT}, "evil"); err != nil || !ok || got != fs {
		t.Errorf("write-back masking: %+v %v %v", got, ok, err)
	}
	if _, ok, err := tr.Check(ctx, scope, map[string]any{"q": "Zm9vYmFyYmF6cXV4777"}, "evil"); err != nil || ok {
		t.Errorf("write-back alone: %v %v", ok, err)
	}
	// Too many strings to look up.
	many := make([]any, 20000)
	for i := range many {
		many[i] = ""
	}
	many = append(many, githubPAT)
	if _, _, err := tr.Check(ctx, scope, map[string]any{"rows": many}, ""); !errors.Is(err, flow.ErrTooMany) {
		t.Errorf("many strings: %v", err)
	}
	// A flood of fakes from one result keeps the secret.
	var flood strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&flood, "k%d=Zm9vYmFy%08dYmF6\n", i, i)
	}
	if err := tr.Record(ctx, scope, evil, result(flood.String()), hints.SensitivityRestricted); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tr.Check(ctx, scope, map[string]any{"q": githubPAT}, ""); err != nil || !ok {
		t.Errorf("after a flood: %v %v", ok, err)
	}
}
