//go:build integration

package cli

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/chromium"
	"github.com/preflightmcp/preflight/internal/npmdeps"
	"github.com/preflightmcp/preflight/lint"
)

func TestDocsLive(t *testing.T) {
	url, _ := filesServer(t)
	code, out, errOut := runMain(t, "docs", "-url", url)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"| **manage_files** | *any (as listed)* | 🔴 destructive | delete <sub>static</sub>",
		"| `action=read` | 🟢 read-only | read <sub>resolved</sub> | yes <sub>resolved</sub>",
		"| `action=append` | 🟠 write |",
		"| `action=delete` | 🔴 destructive | delete <sub>resolved</sub>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("docs lacks %q:\n%s", want, out)
		}
	}
	html := filepath.Join(t.TempDir(), "files.html")
	code, _, errOut = runMain(t, "docs", "-url", url, "-format", "html", "-o", html)
	if code != exitOK || !strings.Contains(errOut, "wrote "+html) {
		t.Fatalf("html: exit %d\n%s", code, errOut)
	}
	dom := chromium.DOM(t, html, "risk=destructive")
	for _, want := range []string{`data-ready="1"`, "Showing 1 of 1 tools (3 rows)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page in Chromium lacks %q", want)
		}
	}
}

// npmServers are the reference servers pinned in lint/testdata, with the
// arguments each needs, and what lint finds in them.
var npmServers = []struct {
	pkg, name string
	args      []string
	exit      int
	checks    []string
}{
	{"server-filesystem", "secure-filesystem-server", []string{"DIR"}, exitFailure, []string{lint.CheckDestructiveUnconfirmed}},
	{"server-everything", "mcp-servers/everything", []string{"stdio"}, exitOK, nil},
	{"server-memory", "memory-server", nil, exitFailure, []string{lint.CheckDestructiveUnconfirmed}},
}

// TestLintNPMServers runs lint and docs against the reference servers
// from npm (pinned in lint/testdata, installed with npm ci), started over
// stdio through their bin entry with node.
func TestLintNPMServers(t *testing.T) {
	dir := npmDeps(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (Node.js >= 20 is required): %v", err)
	}
	for _, s := range npmServers {
		t.Run(s.pkg, func(t *testing.T) {
			command := []string{"env", "MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl"), node, npmdeps.Bin(t, dir, s.pkg)}
			for _, a := range s.args {
				if a == "DIR" {
					a = t.TempDir()
				}
				command = append(command, a)
			}
			code, out, errOut := runMain(t, append([]string{"lint", "-format", "json", "--"}, command...)...)
			if code != s.exit {
				t.Fatalf("exit %d, want %d\n%s%s", code, s.exit, out, errOut)
			}
			var doc lintDoc
			decodeJSON(t, out, &doc)
			var got []string
			for _, f := range doc.Findings {
				if !slices.Contains(got, f.Check) {
					got = append(got, f.Check)
				}
			}
			if !slices.Equal(got, s.checks) || doc.Target.Tools == 0 {
				t.Errorf("checks %v, want %v (%d tools)", got, s.checks, doc.Target.Tools)
			}
			code, out, errOut = runMain(t, append([]string{"docs", "--"}, command...)...)
			if code != exitOK || !strings.Contains(out, "# Safety table: "+s.name) {
				t.Errorf("docs: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// npmDeps installs lint/testdata's pinned packages with npm ci unless
// node_modules already matches the lock file, and returns the directory.
func npmDeps(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "..", "lint", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	npmdeps.EnsureT(t, dir)
	return dir
}
