package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/lint"
)

// sharedCatalogs returns the directory of the shared tool catalogs:
// testdata/catalogs at the repository root.
func sharedCatalogs(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalogs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "github-all.json")); err != nil {
		t.Fatalf("the shared tool catalogs are not at %s (testdata/catalogs at the repository root): %v", dir, err)
	}
	return dir
}

// catalogs are the shared catalogs with their tool counts (from their
// README) and the tokens of their listing today, which depend only on the
// tokenizer and [Visible] (the cross-check test confirms them against
// OpenAI's tiktoken).
var catalogs = []struct {
	file  string
	tools int
	today int
}{
	{"github-all.json", 85, 22013},
	{"github-default.json", 44, 11664},
	{"livemcptool.json", 527, 87626},
	{"server-everything.json", 13, 1535},
	{"server-filesystem.json", 14, 2078},
	{"server-memory.json", 9, 1203},
}

func readShared(t testing.TB, file string) []*mcp.Tool {
	t.Helper()
	target, err := lint.ReadCatalog(filepath.Join(sharedCatalogs(t), file))
	if err != nil {
		t.Fatal(err)
	}
	tools := make([]*mcp.Tool, len(target.Tools))
	for i, tool := range target.Tools {
		if tools[i], err = tool.MCP(); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return tools
}

// derived pairs tools with disclose's minimal listing and full
// definitions, as the command does.
func derived(tools []*mcp.Tool, level disclose.SchemaLevel) []Tool {
	ts := make([]Tool, len(tools))
	for i, t := range tools {
		ts[i] = Tool{Listed: t, Minimal: disclose.Minimal(t, level), Fetched: disclose.Full(t, nil)}
	}
	return ts
}

func TestSharedCatalogs(t *testing.T) {
	t.Parallel()
	c := counter(t)
	for _, cat := range catalogs {
		t.Run(cat.file, func(t *testing.T) {
			t.Parallel()
			tools := readShared(t, cat.file)
			if len(tools) != cat.tools {
				t.Fatalf("%d tools, want %d", len(tools), cat.tools)
			}
			r, err := Measure(c, derived(tools, disclose.SchemaOpen), []int{1, 3, 5})
			if err != nil {
				t.Fatal(err)
			}
			if r.Today != cat.today {
				t.Errorf("today = %d tokens, want %d", r.Today, cat.today)
			}
			if r.Minimal <= 0 || r.Minimal >= r.Today {
				t.Errorf("minimal = %d tokens, today %d", r.Minimal, r.Today)
			}
			for _, tc := range r.PerTool {
				if tc.Today <= 0 || tc.Minimal <= 0 || tc.Fetch < tc.Today {
					t.Errorf("%s: today %d, minimal %d, fetch %d: want positive counts and a fetch at least as large as the listing", tc.Name, tc.Today, tc.Minimal, tc.Fetch)
				}
			}
		})
	}
}

// TestVisibleLeavesOutIcons checks that the GitHub catalogs' icons, which
// are large base64 images, are not counted.
func TestVisibleLeavesOutIcons(t *testing.T) {
	t.Parallel()
	tools := readShared(t, "github-all.json")
	withIcons := 0
	for _, tool := range tools {
		if len(tool.Icons) == 0 {
			continue
		}
		withIcons++
		b, err := Visible(tool)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"icons"`) || strings.Contains(string(b), tool.Icons[0].Source) {
			t.Fatalf("%s: icons counted: %.200s", tool.Name, b)
		}
	}
	if withIcons == 0 {
		t.Fatal("no tool of github-all.json has icons; the test checks nothing")
	}
}
