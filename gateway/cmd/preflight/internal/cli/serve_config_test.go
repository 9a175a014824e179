package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestServeConfigClaudeDesktop serves a Claude Desktop configuration file
// as it is written (mcpServers, with keys of Claude Desktop's own that the
// gateway does not use) whose one server is examples/files over stdio:
// the gateway starts it, lists its tool unprefixed and passes a call
// through in both eras.
func TestServeConfigClaudeDesktop(t *testing.T) {
	bin := buildExample(t, "files")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "hello.txt"), "hello from the upstream\n")
	cfg, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{
			"files": map[string]any{"command": bin, "args": []string{"-root", root}},
		},
		"globalShortcut": "Ctrl+Space",
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, path, string(cfg))

	url, printedOut, stderr, stop := runServe(t, "-http", "127.0.0.1:0", "-config", path)
	if !strings.Contains(printedOut, "files  up") {
		t.Errorf("the upstream is not up:\n%s", printedOut)
	}
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		r := p.Call(t, "tools/list", nil)
		var names []string
		for _, tl := range r.Result["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		if got := strings.Join(names, ","); got != "manage_files" {
			t.Errorf("%s tools = %s", p.Version, got)
		}
		r = p.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"path": "hello.txt", "action": "read"}})
		if r.Error != nil || !strings.Contains(string(r.Raw), "hello from the upstream") {
			t.Errorf("%s call: %s", p.Version, r.Raw)
		}
		p.Close()
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// TestServeConfigErrors: a file that is not valid exits 3, one the
// gateway cannot set up exits 1, each with a message naming the file and
// the key.
func TestServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, want string
		code             int
	}{
		{"unknown.yaml", "servers:\n  a:\n    command: x\n    bogus: 1\n", "bogus", exitCouldNotRun},
		{"unprefixed.yaml", "servers:\n  a: {command: x, prefix: \"\"}\n  b: {command: y}\n", "servers.a.prefix", exitFailure},
	} {
		path := filepath.Join(dir, tc.name)
		writeFile(t, path, tc.body)
		code, _, errOut := runMain(t, "serve", "-http", "127.0.0.1:0", "-config", path)
		if code != tc.code || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, tc.name) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q and the file", tc.name, code, errOut, tc.code, tc.want)
		}
	}
}

// TestConfigFileExitCodes: every command that reads -config exits as its
// help says when the file is missing or not valid: 3 for the gateway's
// configuration (serve, audit, pins), 2 for lint's (a usage error, "bad
// flags or configuration"), naming the file, before serve prints anything.
func TestConfigFileExitCodes(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	invalid := filepath.Join(dir, "invalid.yaml")
	writeFile(t, invalid, "servers:\n  a:\n    command: x\n    bogus: 1\n")
	badLint := filepath.Join(dir, "lint.json")
	writeFile(t, badLint, `{"ignore": [`)
	catalog := filepath.Join("testdata", "lint-catalog.json")
	for _, tc := range []struct {
		args []string
		file string
		code int
	}{
		{[]string{"serve", "-http", "127.0.0.1:0", "-config", missing}, missing, exitCouldNotRun},
		{[]string{"serve", "-http", "127.0.0.1:0", "-config", invalid}, invalid, exitCouldNotRun},
		{[]string{"audit", "-config", missing}, missing, exitCouldNotRun},
		{[]string{"audit", "-config", invalid}, invalid, exitCouldNotRun},
		{[]string{"pins", "-config", missing, "list"}, missing, exitCouldNotRun},
		{[]string{"pins", "-config", invalid, "list"}, invalid, exitCouldNotRun},
		{[]string{"lint", catalog, "-config", missing}, missing, exitUsage},
		{[]string{"lint", catalog, "-config", badLint}, badLint, exitUsage},
	} {
		code, out, errOut := runMain(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.file) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d naming the file", tc.args, code, out, errOut, tc.code)
		}
	}
}
