package mirror

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/resolve"
)

func tool(name, schema string) *catalog.Tool {
	raw := json.RawMessage(`{"name":"` + name + `","inputSchema":` + schema + `}`)
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		panic(err)
	}
	return &catalog.Tool{Upstream: "up", Name: name, Raw: raw, Tool: &t}
}

func names(ts []*catalog.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Exposed)
	}
	return out
}

// TestSync: a tool the SDK server refuses is a problem and leaves the
// view; the others are registered, and dropped once the view lacks them.
func TestSync(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	rs := resolve.NewServer(s, nil)
	m := New(s, rs, resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
		return resolve.Resolution{}, nil
	}), slog.New(slog.DiscardHandler))

	v := catalog.Build([]*catalog.Listing{{Upstream: "up", Tools: []*catalog.Tool{
		tool("good", `{"type":"object"}`), tool("bad", `{"type":"string"}`),
	}}}, false)
	got := m.Sync(v)
	if n := names(got.Tools); len(n) != 1 || n[0] != "good" {
		t.Errorf("synced tools = %v, want [good]", n)
	}
	if len(got.Problems) != 1 || got.Problems[0].Name != "bad" {
		t.Errorf("problems = %v, want the refused tool", got.Problems)
	}
	if _, ok := v.Tool("bad"); ok {
		t.Error("a refused tool stays in the view")
	}
	if m.tools["good"] == "" {
		t.Error("the tool served is not registered")
	}

	m.Sync(catalog.Build(nil, false))
	if len(m.tools) != 0 {
		t.Errorf("registered after the tools left: %v", m.tools)
	}
}
