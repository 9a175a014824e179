package flow_test

import (
	"context"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/flow"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/hints"
)

// BenchmarkTracker measures what the flow stage adds to one call in
// memory: recording a 4 KiB restricted result holding a key, and checking
// a call's arguments (a 200-byte SQL statement).
//
//	cd gateway && go test -run '^$' -bench BenchmarkTracker -benchmem ./internal/flow/
func BenchmarkTracker(b *testing.B) {
	s := state.NewMemory(nil)
	defer s.Close()
	tr, err := flow.New(flow.Options{Flows: s.Flows})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	res := result(strings.Repeat("line of ordinary text, nothing secret in it at all 42\n", 75) + "GITHUB_TOKEN=" + githubPAT + "\n")
	args := map[string]any{"query": "INSERT INTO notes (who, body) VALUES ('alice', 'a note of about two hundred bytes, ordinary words and one id 5f3c9e1a77b2') -- " + awsKey}
	src := state.FlowSource{Upstream: "fs", Tool: "fs__read_text_file", Call: 1}
	b.Run("record", func(b *testing.B) {
		for b.Loop() {
			if err := tr.Record(ctx, "p", src, res, hints.SensitivityRestricted); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := tr.Check(ctx, "p", args, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
