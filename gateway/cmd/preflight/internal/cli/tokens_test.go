package cli

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway/internal/tokens"
)

// tokensCatalogFiles returns the shared tool catalogs, in the order a
// shell expands testdata/catalogs/*.json at the repository root.
func tokensCatalogFiles(t *testing.T) []string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "..", "testdata", "catalogs"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shared tool catalogs in %s (testdata/catalogs at the repository root): %v", dir, err)
	}
	return files
}

// tokensCatalogs are the shared catalogs with their tool counts and the
// tokens of their listing today (which do not depend on package disclose).
var tokensCatalogs = map[string]struct{ tools, today int }{
	"github-all.json":        {85, 22013},
	"github-default.json":    {44, 11664},
	"livemcptool.json":       {527, 87626},
	"server-everything.json": {13, 1535},
	"server-filesystem.json": {14, 2078},
	"server-memory.json":     {9, 1203},
}

func TestTokensHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runMain(t, "help", "tokens")
	if code != exitOK {
		t.Fatalf("help tokens: exit %d", code)
	}
	golden(t, "tokens-help.golden", out)
}

// TestTokensCatalogs runs the command on every shared catalog: the table,
// the failing descriptions and the verdict are in a golden file, and the
// Markdown table must be the one in docs/tokens.md.
func TestTokensCatalogs(t *testing.T) {
	t.Parallel()
	files := tokensCatalogFiles(t)
	if len(files) != len(tokensCatalogs) {
		t.Errorf("%d catalogs in testdata/catalogs, the test knows %d: update tokensCatalogs, the goldens and docs/tokens.md", len(files), len(tokensCatalogs))
	}

	code, out, errOut := runMain(t, append([]string{"tokens"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	rows := tableRows(t, out, "CATALOG")
	for name, want := range tokensCatalogs {
		row := rows[name]
		if row == nil {
			t.Errorf("no row for %s", name)
			continue
		}
		if row["TOOLS"] != strconv.Itoa(want.tools) || row["TODAY"] != strconv.Itoa(want.today) {
			t.Errorf("%s: %s tools and %s tokens today, want %d and %d", name, row["TOOLS"], row["TODAY"], want.tools, want.today)
		}
		for _, col := range []string{"MINIMAL", "SAVING", "BREAK-EVEN", "K=1", "K=3", "K=5"} {
			if row[col] == "" {
				t.Errorf("%s: no %s", name, col)
			}
		}
	}
	if !strings.Contains(out, "\ngoal (at least 85% fewer tokens on every catalog of 9 tools or more;") {
		t.Errorf("no verdict:\n%s", out)
	}
	golden(t, "tokens-catalogs.golden", out)

	code, md, errOut := runMain(t, append([]string{"tokens", "-markdown"}, files...)...)
	if code != exitOK {
		t.Fatalf("-markdown: exit %d, stderr:\n%s", code, errOut)
	}
	golden(t, "tokens-catalogs-markdown.golden", md)
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "docs", "tokens.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), md) {
		t.Errorf("docs/tokens.md does not hold the output of `go run ./gateway/cmd/preflight tokens -markdown testdata/catalogs/*.json` "+
			"(package disclose or the catalogs changed?); paste it in:\n%s", md)
	}
}

// tokensDocOut is the part of the JSON output the tests read.
type tokensDocOut struct {
	Encoding string `json:"encoding"`
	Schema   string `json:"schema"`
	K        []int  `json:"k"`
	Catalogs []struct {
		Source      string `json:"source"`
		Kind        string `json:"kind"`
		MinimalFrom string `json:"minimalFrom"`
		tokens.Report
	} `json:"catalogs"`
	Goal struct {
		Met                 bool     `json:"met"`
		Missed              []string `json:"missed"`
		FailingDescriptions int      `json:"failingDescriptions"`
		InheritedFailures   int      `json:"inheritedFailures"`
	} `json:"goal"`
}

func TestTokensJSON(t *testing.T) {
	t.Parallel()
	var memory string
	for _, f := range tokensCatalogFiles(t) {
		if filepath.Base(f) == "server-memory.json" {
			memory = f
		}
	}
	code, out, errOut := runMain(t, "tokens", "-json", "-k", "2,20", "-schema", "toplevel", memory)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var doc tokensDocOut
	decodeJSON(t, out, &doc)
	if doc.Encoding != tokens.Encoding || doc.Schema != "toplevel" || len(doc.K) != 2 || len(doc.Catalogs) != 1 {
		t.Fatalf("doc = %+v", doc)
	}
	r := doc.Catalogs[0]
	if r.Source != memory || r.Kind != "file" || r.MinimalFrom != "derived" || r.Tools != 9 || len(r.PerTool) != 9 || r.Today != 1203 {
		t.Errorf("catalog = %+v", r)
	}
	if len(r.Tasks) != 2 || r.Tasks[0].K != 2 || r.Tasks[0].Fetched != 2 || r.Tasks[1].K != 20 || r.Tasks[1].Fetched != 9 || len(r.Tasks[1].MaxTools) != 9 {
		t.Errorf("tasks = %+v", r.Tasks)
	}
	// At schema toplevel the minimal listing keeps property names: more
	// than at the default, object.
	_, outOpen, _ := runMain(t, "tokens", "-json", memory)
	var open tokensDocOut
	decodeJSON(t, outOpen, &open)
	if open.Schema != "object" || open.Catalogs[0].Minimal >= r.Minimal {
		t.Errorf("minimal: %d tokens at the default, %d toplevel; want fewer at the default", open.Catalogs[0].Minimal, r.Minimal)
	}
	// Catalogs of 9 tools or more are held to the goal.
	if doc.Goal.Met != (r.Saving >= 85 && doc.Goal.FailingDescriptions == 0) || doc.Goal.Met == (len(doc.Goal.Missed)+doc.Goal.FailingDescriptions > 0) {
		t.Errorf("goal = %+v, saving %.1f%%", doc.Goal, r.Saving)
	}
}

func TestTokensToolTable(t *testing.T) {
	t.Parallel()
	var memory string
	for _, f := range tokensCatalogFiles(t) {
		if filepath.Base(f) == "server-memory.json" {
			memory = f
		}
	}
	code, out, errOut := runMain(t, "tokens", "-tools", memory)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	i := strings.Index(out, memory+": 9 tools")
	if i < 0 {
		t.Fatalf("no tool table:\n%s", out)
	}
	rows := tableRows(t, out[i:], "NAME")
	row := rows["create_entities"]
	if len(rows) != 9 || row == nil || row["CHECK"] != "ok" || row["MINIMAL DESCRIPTION"] != "Create multiple new entities in the knowledge graph" {
		t.Errorf("tool table:\n%s", out[i:])
	}
}

// TestTokensServer measures examples/files over streamable HTTP, in both
// eras: its listing is derived.
func TestTokensServer(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	for _, era := range eras {
		code, out, errOut := runMain(t, "tokens", "-json", "-era", era, "-url", url)
		if code != exitOK {
			t.Fatalf("%s: exit %d, stderr:\n%s", era, code, errOut)
		}
		var doc tokensDocOut
		decodeJSON(t, out, &doc)
		r := doc.Catalogs[0]
		if r.Source != url || r.Kind != "url" || r.MinimalFrom != "derived" || r.Tools != 1 || r.PerTool[0].Name != filetool.Name ||
			r.Minimal <= 0 || r.Minimal >= r.Today || len(r.Failing) != 0 {
			t.Errorf("%s: %+v", era, r)
		}
		// A catalog of one tool is not held to the goal.
		if !doc.Goal.Met {
			t.Errorf("%s: goal = %+v", era, doc.Goal)
		}
	}
}

// TestTokensServerDisclosed measures examples/files with progressive
// disclosure on (package disclose): the listing served is the minimal
// one, the full definitions come from the tool_descriptions resource, and
// the figures are those derived from the same server without disclosure.
func TestTokensServerDisclosed(t *testing.T) {
	t.Parallel()
	plain, _ := filesServer(t)
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	server := filetool.NewServer(root, nil)
	disclose.New(server, nil)
	ts := httptest.NewServer(endpoint.NewHandler(server, nil))
	t.Cleanup(ts.Close)
	disclosed := ts.URL + endpoint.Path

	_, out, _ := runMain(t, "tokens", "-json", "-url", plain)
	var want tokensDocOut
	decodeJSON(t, out, &want)
	for _, era := range eras {
		code, out, errOut := runMain(t, "tokens", "-json", "-era", era, "-url", disclosed)
		if code != exitOK {
			t.Fatalf("%s: exit %d, stderr:\n%s", era, code, errOut)
		}
		var doc tokensDocOut
		decodeJSON(t, out, &doc)
		got, w := doc.Catalogs[0], want.Catalogs[0]
		if got.MinimalFrom != "served" || got.Tools != 1 {
			t.Fatalf("%s: %+v", era, got)
		}
		if got.Today != w.Today || got.Minimal != w.Minimal || got.PerTool[0].Fetch != w.PerTool[0].Fetch ||
			got.PerTool[0].MinimalDescription != w.PerTool[0].MinimalDescription {
			t.Errorf("%s: served %+v\nderived %+v", era, got.PerTool[0], w.PerTool[0])
		}
	}
}

// TestTokensStdio builds examples/files and measures it over stdio, with
// and without progressive disclosure.
func TestTokensStdio(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "files")
	dir := t.TempDir()
	code, out, errOut := runMain(t, "tokens", "--", bin, "-root", dir)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	rows := tableRows(t, out, "CATALOG")
	if len(rows) != 1 {
		t.Fatalf("rows = %v", rows)
	}
	for name, row := range rows {
		if !strings.HasPrefix(name, bin) || row["TOOLS"] != "1" {
			t.Errorf("row %s = %v", name, row)
		}
	}

	// With -disclose the example serves the minimal listing and the
	// tool_descriptions resource: the same listings, measured as served,
	// and a larger fetch, since the example gives examples and guidance
	// that the derived measure (disclose.Full without details) lacks.
	var plain, disclosed tokensDocOut
	_, out, _ = runMain(t, "tokens", "-json", "--", bin, "-root", dir)
	decodeJSON(t, out, &plain)
	code, out, errOut = runMain(t, "tokens", "-json", "--", bin, "-root", dir, "-disclose")
	if code != exitOK {
		t.Fatalf("-disclose: exit %d, stderr:\n%s", code, errOut)
	}
	decodeJSON(t, out, &disclosed)
	p, d := plain.Catalogs[0], disclosed.Catalogs[0]
	if d.MinimalFrom != "served" || p.MinimalFrom != "derived" || d.Kind != "command" ||
		d.Today != p.Today || d.Minimal != p.Minimal || d.PerTool[0].Fetch <= p.PerTool[0].Fetch {
		t.Errorf("-disclose: %+v\nwithout: %+v", d, p)
	}
}

func TestTokensErrors(t *testing.T) {
	t.Parallel()
	files := tokensCatalogFiles(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "nothing to read"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", files[0]}, "not both"},
		{[]string{"-url", "http://127.0.0.1:1/mcp", "--", "server"}, "either -url or a command"},
		{[]string{"-format", "sarif", files[0]}, "want text, json or markdown"},
		{[]string{"--"}, "no command after --"},
		{[]string{"-header", "A: b", files[0]}, "-header applies to -url only"},
		{[]string{"-k", "0", files[0]}, `-k "0"`},
		{[]string{"-k", "1,x", files[0]}, `-k "1,x"`},
		{[]string{"-schema", "tiny", files[0]}, `-schema "tiny"`},
		{[]string{"-json", "-markdown", files[0]}, "conflicts with -json: give one output format"},
		{[]string{"-format", "json", "-format", "text", files[0]}, "conflicts with -format json"},
		{[]string{"-timeout", "-1s", files[0]}, "-timeout -1s"},
		{[]string{"-era", "2020-01-01", "-url", "http://127.0.0.1:1/mcp"}, `-era "2020-01-01"`},
	} {
		code, out, errOut := runMain(t, append([]string{"tokens"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.HasSuffix(errOut, "\nRun 'preflight help tokens' for usage.\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q with a pointer to the help", tc.args, code, out, errOut, tc.want)
		}
	}

	notCatalog := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(notCatalog, []byte(`{"server": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{notCatalog},
		{filepath.Join(t.TempDir(), "missing.json")},
	} {
		code, out, errOut := runMain(t, append([]string{"tokens"}, args...)...)
		if code != exitCouldNotRun || out != "" || !strings.Contains(errOut, args[0]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 3 naming the file", args, code, out, errOut)
		}
	}
}
