package cli

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, errOut := runMain(t, "help")
	if code != exitOK || errOut != "" {
		t.Fatalf("help: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	golden(t, "usage.golden", out)
	for _, want := range []string{"0  done", "1  findings", "2  usage error", "3  could not run", "connection refused", "-timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not document %q", want)
		}
	}

	for _, c := range commands {
		code, out, _ := runMain(t, "help", c.name)
		if code != exitOK || !strings.Contains(out, "usage: preflight "+c.name) || !strings.Contains(out, "Flags:") || !strings.Contains(out, "Exit status") {
			t.Errorf("help %s: exit %d, output:\n%s", c.name, code, out)
		}
		code, out2, _ := runMain(t, c.name, "-h")
		if code != exitOK || out2 != out {
			t.Errorf("%s -h: exit %d, output differs from help %s:\n%s", c.name, code, c.name, out2)
		}
	}
	golden(t, "help-inspect.golden", func() string { _, out, _ := runMain(t, "help", "inspect"); return out }())
	golden(t, "help-demo.golden", func() string { _, out, _ := runMain(t, "help", "demo"); return out }())
}

// TestConventions checks that every command shares the flags of the
// convention: -format with -json short for -format json, -o, and, for a
// command that talks to a server, -timeout, -url, -header and -era.
func TestConventions(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		if c.name == "serve" { // runs until stopped: no report to format, no time limit
			continue
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		cmd := c.new()
		cmd.flags(fs)
		for _, name := range []string{"format", "o", "json", "timeout"} {
			if fs.Lookup(name) == nil {
				t.Errorf("%s has no -%s", c.name, name)
			}
		}
		if c.name != "demo" && c.name != "audit" && c.name != "token" && c.name != "pins" && c.name != "connect" && c.name != "version" && c.name != "login" && c.name != "vault" { // those that talk to no server
			for _, name := range []string{"url", "header", "era"} {
				if fs.Lookup(name) == nil {
					t.Errorf("%s has no -%s", c.name, name)
				}
			}
		}
		if fs.Lookup("catalog") != nil {
			t.Errorf("%s has -catalog: catalogs are positional", c.name)
		}
		if f := cmd.conventions(); !slices.Contains(f.formats, "json") || !f.timed {
			t.Errorf("%s: formats %v, timed %v", c.name, f.formats, f.timed)
		}
	}
}

// TestUsageErrors: a usage error prints the error and one line pointing at
// the help, nothing else, and exits 2, for every command.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // the first line of stderr
		help string // the command the pointer names
	}{
		{[]string{"frobnicate"}, `preflight: unknown command "frobnicate"`, ""},
		{[]string{"help", "frobnicate"}, `preflight help: unknown command "frobnicate"`, ""},
		{[]string{"demo", "-nope"}, "preflight demo: flag provided but not defined: -nope", "demo"},
		{[]string{"demo", "extra"}, "preflight demo: demo takes no arguments", "demo"},
		{[]string{"demo", "-era", "2024-11-05"}, `preflight demo: -era "2024-11-05": want 2026-07-28 or 2025-11-25`, "demo"},
		{[]string{"demo", "-format", "html"}, `preflight demo: invalid value "html" for flag -format: want text or json`, "demo"},
		{[]string{"inspect", "-timeout", "-3s", "-url", "http://127.0.0.1:1/mcp"}, "preflight inspect: -timeout -3s: want a duration of 0 or more", "inspect"},
		{[]string{"inspect", "-json", "-format", "text", "-url", "http://127.0.0.1:1/mcp"}, `preflight inspect: invalid value "text" for flag -format: conflicts with -json: give one output format`, "inspect"},
		{[]string{"lint", "a.json", "b.json"}, "preflight lint: one catalog file at a time, got 2: a.json b.json", "lint"},
		{[]string{"docs"}, "preflight docs: nothing to read: give a catalog file, -url URL, or a command to start after --", "docs"},
		{[]string{"tokens", "-header", "A: b", "a.json"}, "preflight tokens: -header applies to -url only", "tokens"},
	} {
		code, out, errOut := runMain(t, tc.args...)
		pointer := "Run 'preflight help' for the commands."
		if tc.help != "" {
			pointer = "Run 'preflight help " + tc.help + "' for usage."
		}
		if want := tc.want + "\n" + pointer + "\n"; code != exitUsage || out != "" || errOut != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and stderr %q", tc.args, code, out, errOut, want)
		}
	}
	code, _, errOut := runMain(t)
	if code != exitUsage || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no arguments: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestOutputFile: -o writes what standard output would have shown to the
// file, for every command, also when lint fails on findings; stdout stays
// empty and stderr says where the output went.
func TestOutputFile(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	dir := t.TempDir()
	cat := filepath.Join("testdata", "lint-catalog.json")
	for _, tc := range []struct {
		args []string
		code int
		want string // in the file
	}{
		{[]string{"demo", "-format", "json"}, exitOK, `"protocolVersion": "2026-07-28"`},
		{[]string{"inspect", "-url", url}, exitOK, "manage_files"},
		{[]string{"inspect", "-json", "-url", url, "resolve", "manage_files", readArgs}, exitOK, `"resultType": "complete"`},
		{[]string{"lint", cat, "-format", "sarif"}, exitFailure, `"version": "2.1.0"`},
		{[]string{"docs", cat, "-format", "json"}, exitOK, `"title": "catalog-fixture 1.0.0"`},
		{[]string{"docs", cat}, exitOK, "# Safety table: catalog-fixture 1.0.0"},
		{[]string{"tokens", "-markdown", cat}, exitOK, "| lint-catalog.json | 6 |"},
	} {
		file := filepath.Join(dir, tc.args[0]+".out")
		os.Remove(file)
		code, out, errOut := runMain(t, append(tc.args, "-o", file)...)
		b, err := os.ReadFile(file)
		if code != tc.code || out != "" || err != nil || !strings.Contains(string(b), tc.want) || !strings.Contains(errOut, "wrote "+file) {
			t.Errorf("%q -o: exit %d, stdout %q, stderr %q, file %q (%v); want exit %d and %q in the file", tc.args, code, out, errOut, b, err, tc.code, tc.want)
		}
	}
	// Nothing is written when the command could not run.
	file := filepath.Join(dir, "none.out")
	if code, _, _ := runMain(t, "lint", filepath.Join(dir, "absent.json"), "-o", file); code != exitCouldNotRun || exists(t, file) {
		t.Errorf("lint of a missing catalog: exit %d, file written %v", code, exists(t, file))
	}
	// An output that cannot be written is exit 3.
	code, _, errOut := runMain(t, "docs", cat, "-o", filepath.Join(dir, "no", "such", "dir", "x.md"))
	if code != exitCouldNotRun || !strings.Contains(errOut, "writing the output") {
		t.Errorf("unwritable -o: exit %d, stderr %q", code, errOut)
	}
}

// TestOneCatalogReader: lint, docs and tokens read catalogs the same way:
// the same formats, the same errors (exit 3), and an empty catalog is an
// error, not a pass.
func TestOneCatalogReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const tools = `[{"name": "get_note", "description": "Reads a note.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}]`
	good := map[string]string{
		"result.json":   `{"tools": ` + tools + `}`,
		"response.json": `{"jsonrpc": "2.0", "id": 1, "result": {"tools": ` + tools + `}}`,
		"array.json":    tools,
		"testdata.json": `{"server": {"name": "notes", "version": "1"}, "protocolVersion": "2025-11-25", "tools": ` + tools + `}`,
	}
	bad := map[string]string{
		"empty.json":     `{"tools": []}`,
		"nothing.json":   ``,
		"syntax.json":    "{\n  \"tools\": [,]\n}",
		"server.json":    `{"server": {}}`,
		"error.json":     `{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}`,
		"noname.json":    `[{"description": "a tool without a name"}]`,
		"wrongtype.json": `[{"name": "x", "annotations": {"readOnlyHint": "yes"}}]`,
	}
	for name, content := range good {
		writeFile(t, filepath.Join(dir, name), content)
	}
	for name, content := range bad {
		writeFile(t, filepath.Join(dir, name), content)
	}
	commands := [][]string{{"lint"}, {"docs"}, {"tokens"}}
	read := map[string]string{"lint": ", 1 tool", "docs": "**get_note**", "tokens": "  1      "}
	for name := range good {
		for _, cmd := range commands {
			code, out, errOut := runMain(t, append(cmd, filepath.Join(dir, name))...)
			if code != exitOK || !strings.Contains(out, read[cmd[0]]) {
				t.Errorf("%s %s: exit %d, stdout:\n%s\nstderr:\n%s", cmd[0], name, code, out, errOut)
			}
		}
	}
	for name, want := range map[string]string{
		"empty.json":     "the catalog lists no tools",
		"nothing.json":   "the file is empty",
		"syntax.json":    "not valid JSON: line 2, column 13",
		"server.json":    `no "tools" array`,
		"error.json":     "a JSON-RPC error response (-32601",
		"noname.json":    `tools[0] (line 1) has no "name"`,
		"wrongtype.json": "annotations.readOnlyHint is a string, want bool",
		"missing.json":   "missing.json: no such file",
	} {
		var first string
		for _, cmd := range commands {
			file := filepath.Join(dir, name)
			code, out, errOut := runMain(t, append(cmd, file)...)
			msg := strings.TrimPrefix(errOut, "preflight "+cmd[0]+": ")
			if code != exitCouldNotRun || out != "" || !strings.HasPrefix(msg, file+": ") || !strings.Contains(msg, want) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 3 and %q", cmd[0], name, code, out, errOut, want)
			}
			if first == "" {
				first = msg
			} else if msg != first {
				t.Errorf("%s %s says %q, lint says %q", cmd[0], name, msg, first)
			}
		}
	}
}
