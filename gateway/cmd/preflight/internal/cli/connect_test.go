package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/preflightmcp/preflight/gateway/config"
)

// testPreflight is the preflight binary the tests' clients start.
const testPreflight = "/opt/preflight/bin/preflight"

// connectHome makes a home directory holding sample (from
// testdata/connect) where client keeps its file, and returns the home, the
// file and the sample's bytes.
func connectHome(t *testing.T, client, sample string) (home, file string, original []byte) {
	t.Helper()
	cl := lookupClient(client)
	if cl == nil {
		t.Fatalf("no client %s", client)
	}
	home = t.TempDir()
	file = cl.path(homeDirs{goos: runtime.GOOS, home: home})
	original, err := os.ReadFile(filepath.Join("testdata", "connect", sample))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, original, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, file, original
}

// defaultConfig is where connect writes client's configuration by default.
func connectDefaultConfig(client, home string) string {
	return filepath.Join(homeDirs{goos: runtime.GOOS, home: home}.config(), "preflight", client+".yaml")
}

func connectArgs(home string, args ...string) []string {
	return append([]string{"connect", "-home", home, "-command", testPreflight}, args...)
}

// normalize replaces the paths of a test run in out with names that do
// not change between runs.
func connectNormalize(out, file, configPath, home string) string {
	out = strings.ReplaceAll(out, configPath, "$CONFIG")
	out = strings.ReplaceAll(out, file, "$FILE")
	return strings.ReplaceAll(out, home, "$HOME")
}

func connectRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// movedServer is what a client's entry says of a server, as package config
// reads it.
type movedServer struct {
	Type           string
	Command        string
	Args           []string
	Env            map[string]string
	Cwd            string
	URL            string
	Headers        map[string]string
	BearerTokenEnv string
	Include        []string
	Exclude        []string
	Connect, Call  time.Duration
}

func viewOf(s *config.Server) movedServer {
	return movedServer{Type: string(s.Type), Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL, Headers: s.Headers,
		BearerTokenEnv: s.BearerTokenEnv, Include: s.Include, Exclude: s.Exclude,
		Connect: time.Duration(s.Timeouts.Connect), Call: time.Duration(s.Timeouts.Call)}
}

// TestConnectClients connects a sample file of every client in a home of
// its own: the client's file and the preflight configuration are as the
// golden files say, config.Load reads the configuration to the servers the
// client had, the backup is the file as it was, and -undo restores it byte
// for byte and removes the configuration.
func TestConnectClients(t *testing.T) {
	const (
		def1m = time.Minute
		def5m = 5 * time.Minute
	)
	for _, tc := range []struct {
		client, sample string
		env            map[string]string
		// fromOriginal: config.Load reads the client's file too, and the
		// servers moved must be the same; else want says what they are.
		fromOriginal bool
		want         map[string]movedServer
		moved, kept  []string
	}{
		{client: "claude-desktop", sample: "claude-desktop.json", fromOriginal: true,
			moved: []string{"filesystem", "memory", "github", "sqlite"}},
		{client: "claude-code", sample: "claude-code.json", fromOriginal: true,
			env:   map[string]string{"API_KEY": "key-1", "AIRTABLE_API_KEY": "key-2"},
			moved: []string{"sentry", "asana", "api-server", "airtable"}},
		{client: "cursor", sample: "cursor.json", fromOriginal: true,
			env: map[string]string{"DATABASE_URL": "postgres://db", "DOCS_TOKEN": "docs-token",
				// What Cursor passes preflight: the workspace package config
				// takes for ~/.cursor/mcp.json (the home), and the home.
				"PREFLIGHT_WORKSPACE_FOLDER": "$HOME", "PREFLIGHT_WORKSPACE_FOLDER_BASENAME": "$BASE", "PREFLIGHT_USER_HOME": "$USERHOME"},
			moved: []string{"postgres", "docs", "local-tools", "streaming", "scripts"}},
		{client: "vscode", sample: "vscode.json", fromOriginal: true,
			env: map[string]string{"PERPLEXITY_KEY": "pplx-1", "REGION": "eu-west-1",
				// What VS Code passes preflight for its inputs and workspace.
				"PREFLIGHT_INPUT_PERPLEXITY_KEY": "pplx-1", "PREFLIGHT_INPUT_REGION": "eu-west-1", "PREFLIGHT_WORKSPACE_FOLDER": "$DIR"},
			moved: []string{"Perplexity", "fetch", "github", "my-server"}},
		{client: "codex", sample: "codex.toml",
			env:   map[string]string{"DOCS_TOKEN": "docs-token", "DOCS_API_KEY": "docs-key"},
			moved: []string{"docs", "github", "figma"}, kept: []string{"old-browser"},
			want: map[string]movedServer{
				"docs": {Type: "http", URL: "https://mcp.example.com/mcp", BearerTokenEnv: "DOCS_TOKEN",
					Headers: map[string]string{"X-Client": "codex ✓", "X-Api-Key": "docs-key"}, Connect: def1m, Call: def5m},
				"github": {Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
					Env:     map[string]string{"GITHUB_API_URL": "https://api.github.com", "TEMPLATE": "literal ${braces} stay"},
					Include: []string{"get_issue", "list_issues", "search_repositories"}, Connect: 20 * time.Second, Call: 2 * time.Minute},
				"figma": {Type: "stdio", Command: "figma-mcp", Args: []string{"--stdio"}, Cwd: "/opt/figma mcp",
					Exclude: []string{"delete_file"}, Connect: def1m, Call: def5m},
			}},
		{client: "gemini-cli", sample: "gemini-cli.json",
			env:   map[string]string{"DB_CONNECTION_STRING": "postgres://db", "EXTERNAL_API_KEY": "ext-key", "HTTP_TOKEN": "http-token"},
			moved: []string{"pythonTools", "httpServer", "legacySse"},
			want: map[string]movedServer{
				"pythonTools": {Type: "stdio", Command: "python", Args: []string{"-m", "my_mcp_server", "--port", "8080"}, Cwd: "$DIR/mcp-servers/python",
					Env:     map[string]string{"DATABASE_URL": "postgres://db", "API_KEY": "ext-key", "PRICE": "5$ flat"},
					Include: []string{"safe_tool", "file_reader"}, Connect: def1m, Call: 15 * time.Second},
				"httpServer": {Type: "http", URL: "http://localhost:3000/mcp", Headers: map[string]string{"Authorization": "Bearer http-token"},
					Connect: def1m, Call: 5 * time.Second},
				"legacySse": {Type: "sse", URL: "http://localhost:8080/sse", Exclude: []string{"dangerous_tool"}, Connect: def1m, Call: def5m},
			}},
		{client: "windsurf", sample: "windsurf.json",
			env:   map[string]string{"GITHUB_TOKEN": "gh-token", "SPECTRON_KEY": "spectron-key"},
			moved: []string{"github", "zapier", "spectron", "ollama"}, kept: []string{"git"},
			want: map[string]movedServer{
				"github": {Type: "stdio", Command: "docker", Args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
					Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "gh-token"}, Exclude: []string{"delete_repository"}, Connect: def1m, Call: def5m},
				"zapier": {Type: "sse", URL: "https://actions.zapier.com/mcp/example/sse", Connect: def1m, Call: def5m},
				"spectron": {Type: "http", URL: "https://api.spectron.dev/mcp", Headers: map[string]string{"API-KEY": "spectron-key", "X-Context": "équipe-α"},
					Connect: def1m, Call: def5m},
				"ollama": {Type: "stdio", Command: "py", Args: []string{"-m", "mcp_ollama_python"}, Connect: def1m, Call: def5m},
			}},
	} {
		t.Run(tc.client, func(t *testing.T) {
			home, file, original := connectHome(t, tc.client, tc.sample)
			configPath := connectDefaultConfig(tc.client, home)
			if tc.client == "cursor" {
				writeFile(t, filepath.Join(home, ".env"), "FROM_ENV_FILE=1\n") // its envFile
			}
			for k, v := range tc.env {
				v = strings.NewReplacer("$HOME", home, "$BASE", filepath.Base(home), "$USERHOME", os.Getenv("HOME"), "$DIR", filepath.Dir(file)).Replace(v)
				t.Setenv(k, v)
			}

			code, out, errOut := runMain(t, connectArgs(home, tc.client)...)
			if code != exitOK {
				t.Fatalf("connect: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, name := range tc.moved {
				if !strings.Contains(out, name) {
					t.Errorf("the report does not name %s:\n%s", name, out)
				}
			}
			for _, name := range tc.kept {
				if !strings.Contains(out, "Kept "+name+" in ") {
					t.Errorf("the report does not say %s stays:\n%s", name, out)
				}
			}
			rewritten, yamlOut := connectRead(t, file), connectRead(t, configPath)
			golden(t, filepath.Join("connect", tc.client+".connected.golden"), connectNormalize(string(rewritten), file, configPath, home))
			golden(t, filepath.Join("connect", tc.client+".yaml.golden"), connectNormalize(string(yamlOut), file, configPath, home))
			if b := connectRead(t, file+backupSuffix); !bytes.Equal(b, original) {
				t.Errorf("the backup is not the file as it was")
			}
			if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the rewritten file's mode: %v, %v; want 0600 as before", fi.Mode(), err)
			}

			// The client starts preflight, serving the configuration.
			command, cfg, ok := connectedEntry(lookupClient(tc.client), rewritten)
			if !ok || command != testPreflight || cfg != configPath {
				t.Errorf("the client's preflight entry: %q -config %q (%v); want %q -config %q", command, cfg, ok, testPreflight, configPath)
			}

			// The configuration has the servers the client had.
			got, err := config.Load(configPath)
			if err != nil {
				t.Fatalf("config.Load of the preflight configuration: %v", err)
			}
			if names := got.Names(); !slices.Equal(names, connectSorted(tc.moved)) {
				t.Errorf("servers %v, want %v", names, connectSorted(tc.moved))
			}
			if tc.fromOriginal {
				want, err := config.Load(file + backupSuffix)
				if err != nil {
					t.Fatalf("config.Load of the client's file: %v", err)
				}
				for _, name := range tc.moved {
					if !reflect.DeepEqual(got.Servers[name], want.Servers[name]) {
						t.Errorf("server %s:\n got %+v\nwant %+v", name, got.Servers[name], want.Servers[name])
					}
				}
			}
			for name, w := range tc.want {
				w.Cwd = strings.ReplaceAll(w.Cwd, "$DIR", filepath.Dir(file))
				if s := got.Servers[name]; s == nil || !reflect.DeepEqual(viewOf(s), w) {
					t.Errorf("server %s:\n got %+v\nwant %+v", name, viewOf(s), w)
				}
			}

			// -undo: the file as it was, byte for byte, and no configuration
			// or backup left.
			code, out, errOut = runMain(t, "connect", "-home", home, "-undo", tc.client)
			if code != exitOK {
				t.Fatalf("undo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if b := connectRead(t, file); !bytes.Equal(b, original) {
				t.Errorf("undo did not restore the file byte for byte:\n%s", unifiedDiff("original", "restored", original, b))
			}
			for _, gone := range []string{configPath, file + backupSuffix} {
				if exists(t, gone) {
					t.Errorf("%s is still there after -undo", gone)
				}
			}
		})
	}
}

func connectSorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestConnectDryRun: -dry-run prints both files' changes as unified diffs
// and writes nothing; so does -undo -dry-run.
func TestConnectDryRun(t *testing.T) {
	t.Parallel()
	home, file, original := connectHome(t, "claude-desktop", "claude-desktop.json")
	configPath := connectDefaultConfig("claude-desktop", home)
	code, out, errOut := runMain(t, connectArgs(home, "-dry-run", "claude-desktop")...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	golden(t, filepath.Join("connect", "dry-run.golden"), connectNormalize(out, file, configPath, home))
	if !bytes.Equal(connectRead(t, file), original) || exists(t, configPath) || exists(t, file+backupSuffix) {
		t.Errorf("-dry-run changed something")
	}

	if code, _, errOut := runMain(t, connectArgs(home, "claude-desktop")...); code != exitOK {
		t.Fatalf("connect: exit %d, stderr:\n%s", code, errOut)
	}
	connected := connectRead(t, file)
	code, out, errOut = runMain(t, "connect", "-home", home, "-undo", "-dry-run", "claude-desktop")
	if code != exitOK || !strings.Contains(out, "--- "+file) || !strings.Contains(out, "+++ /dev/null") || !strings.Contains(out, `-      "command": "`+testPreflight+`",`) {
		t.Errorf("-undo -dry-run: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !bytes.Equal(connectRead(t, file), connected) || !exists(t, configPath) || !exists(t, file+backupSuffix) {
		t.Errorf("-undo -dry-run changed something")
	}
}

// TestConnectAlreadyConnected: a client whose servers include one that
// starts preflight is left as it is, whatever the entry's name; connect
// twice is the same refusal.
func TestConnectAlreadyConnected(t *testing.T) {
	t.Parallel()
	for name, entry := range map[string]string{
		"binary":        `{"command": "/usr/local/bin/preflight", "args": ["serve", "-stdio", "-config", "/etc/gw.yaml"]}`,
		"windows":       `{"command": "C:\\Tools\\Preflight.EXE", "args": ["serve", "-stdio"]}`,
		"go run":        `{"command": "go", "args": ["run", "github.com/preflightmcp/preflight/gateway/cmd/preflight@latest", "serve", "-stdio"]}`,
		"config in dir": `{"command": "/home/me/bin/gw", "args": ["serve", "-stdio", "-config=/home/me/.config/preflight/claude-desktop.yaml"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			home, file, _ := connectHome(t, "claude-desktop", "claude-desktop.json")
			data := strings.Replace(string(connectRead(t, file)), `"mcpServers": {`, `"mcpServers": {"gateway": `+entry+`,`, 1)
			writeFile(t, file, data)
			code, out, errOut := runMain(t, connectArgs(home, "claude-desktop")...)
			if code != exitFailure || out != "" || !strings.Contains(errOut, "mcpServers.gateway") || !strings.Contains(errOut, "already connected; use preflight connect -undo claude-desktop") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and already connected", code, out, errOut)
			}
			if string(connectRead(t, file)) != data || exists(t, file+backupSuffix) || exists(t, connectDefaultConfig("claude-desktop", home)) {
				t.Errorf("something was written")
			}
		})
	}

	home, file, _ := connectHome(t, "codex", "codex.toml")
	if code, _, errOut := runMain(t, connectArgs(home, "codex")...); code != exitOK {
		t.Fatalf("connect: exit %d, stderr:\n%s", code, errOut)
	}
	connected := connectRead(t, file)
	code, _, errOut := runMain(t, connectArgs(home, "-force", "codex")...)
	if code != exitFailure || !strings.Contains(errOut, "already connected") || !bytes.Equal(connectRead(t, file), connected) {
		t.Errorf("connect twice: exit %d, stderr %q", code, errOut)
	}

	// Not preflight: another program's serve subcommand.
	for _, tc := range []struct {
		command string
		args    []string
	}{
		{"npx", []string{"-y", "serve"}},
		{"uvx", []string{"mcp-proxy", "serve", "--config", "/etc/proxy.yaml"}},
		{"preflight-lint", nil},
	} {
		if startsPreflight(tc.command, tc.args, "") {
			t.Errorf("%s %v is taken for preflight", tc.command, tc.args)
		}
	}
}

// TestConnectBackupKept: an existing backup is never overwritten without
// -force; nor is a preflight configuration connect did not write.
func TestConnectBackupKept(t *testing.T) {
	t.Parallel()
	home, file, original := connectHome(t, "cursor", "cursor.json")
	backup := file + backupSuffix
	writeFile(t, backup, "an older backup\n")
	code, _, errOut := runMain(t, connectArgs(home, "cursor")...)
	if code != exitFailure || !strings.Contains(errOut, backup+" already exists") || !strings.Contains(errOut, "preflight connect -undo cursor") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the backup", code, errOut)
	}
	if string(connectRead(t, backup)) != "an older backup\n" || !bytes.Equal(connectRead(t, file), original) {
		t.Errorf("the backup or the file changed")
	}
	if code, _, errOut := runMain(t, connectArgs(home, "-force", "cursor")...); code != exitOK || !bytes.Equal(connectRead(t, backup), original) {
		t.Errorf("-force: exit %d, stderr %q; want the backup replaced by the file", code, errOut)
	}

	home, file, original = connectHome(t, "cursor", "cursor.json")
	configPath := filepath.Join(home, "gw.yaml")
	writeFile(t, configPath, "servers:\n  mine: {command: x}\n")
	code, _, errOut = runMain(t, connectArgs(home, "-config", configPath, "cursor")...)
	if code != exitFailure || !strings.Contains(errOut, configPath+" already exists") || !bytes.Equal(connectRead(t, file), original) || exists(t, file+backupSuffix) {
		t.Errorf("an existing configuration: exit %d, stderr %q; want exit 1 and nothing written", code, errOut)
	}
}

// TestConnectUndoAfterChanges: when the client changed its file since
// connect outside its servers (Claude Code keeps its state in ~/.claude.json,
// Codex trusts projects in config.toml), -undo puts the servers back and
// keeps those changes; when the servers changed, it refuses unless -force.
func TestConnectUndoAfterChanges(t *testing.T) {
	t.Parallel()
	home, file, original := connectHome(t, "claude-code", "claude-code.json")
	if code, _, errOut := runMain(t, connectArgs(home, "claude-code")...); code != exitOK {
		t.Fatalf("connect: exit %d, stderr:\n%s", code, errOut)
	}
	writeFile(t, file, strings.Replace(string(connectRead(t, file)), `"numStartups": 42`, `"numStartups": 43`, 1))
	code, out, errOut := runMain(t, "connect", "-home", home, "-undo", "claude-code")
	if code != exitOK || !strings.Contains(out, "put the servers of") {
		t.Fatalf("undo: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if want := bytes.Replace(original, []byte(`"numStartups": 42`), []byte(`"numStartups": 43`), 1); !bytes.Equal(connectRead(t, file), want) {
		t.Errorf("undo after a change elsewhere:\n%s", unifiedDiff("want", "got", want, connectRead(t, file)))
	}
	if !exists(t, file+backupSuffix) || exists(t, connectDefaultConfig("claude-code", home)) {
		t.Errorf("the backup should stay (the file is not the same) and the configuration go")
	}

	// Codex: a project trusted since.
	home, file, original = connectHome(t, "codex", "codex.toml")
	if code, _, errOut := runMain(t, connectArgs(home, "codex")...); code != exitOK {
		t.Fatalf("connect: exit %d, stderr:\n%s", code, errOut)
	}
	const trusted = "\n[projects.\"/home/zoë/new\"]\ntrust_level = \"trusted\"\n"
	writeFile(t, file, string(connectRead(t, file))+trusted)
	if code, out, errOut := runMain(t, "connect", "-home", home, "-undo", "codex"); code != exitOK {
		t.Fatalf("undo: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var got, want map[string]any
	if err := toml.Unmarshal(connectRead(t, file), &got); err != nil {
		t.Fatalf("the merged file: %v", err)
	}
	if err := toml.Unmarshal(append(original, trusted...), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("codex after undo:\n%s", connectRead(t, file))
	}

	// The servers changed since: refused, then restored with -force.
	home, file, original = connectHome(t, "windsurf", "windsurf.json")
	if code, _, errOut := runMain(t, connectArgs(home, "windsurf")...); code != exitOK {
		t.Fatalf("connect: exit %d, stderr:\n%s", code, errOut)
	}
	changed := strings.Replace(string(connectRead(t, file)), `"mcpServers": {`, `"mcpServers": {"new": {"command": "new-server"},`, 1)
	writeFile(t, file, changed)
	code, _, errOut = runMain(t, "connect", "-home", home, "-undo", "windsurf")
	if code != exitFailure || !strings.Contains(errOut, "changed since preflight connect") || !strings.Contains(errOut, "-force") || string(connectRead(t, file)) != changed {
		t.Errorf("undo after the servers changed: exit %d, stderr %q; want exit 1 and the file left", code, errOut)
	}
	if code, _, errOut := runMain(t, "connect", "-home", home, "-undo", "-force", "windsurf"); code != exitOK || !bytes.Equal(connectRead(t, file), original) {
		t.Errorf("undo -force: exit %d, stderr %q; want the backup restored", code, errOut)
	}

	// Nothing to undo.
	home, _, _ = connectHome(t, "windsurf", "windsurf.json")
	if code, _, errOut := runMain(t, "connect", "-home", home, "-undo", "windsurf"); code != exitFailure || !strings.Contains(errOut, "nothing to undo") {
		t.Errorf("undo without a backup: exit %d, stderr %q", code, errOut)
	}
}

// TestConnectKeeps: servers preflight does not take over stay in the
// client's file as they were, and the report says why.
func TestConnectKeeps(t *testing.T) {
	t.Parallel()
	home, file, _ := connectHome(t, "vscode", "vscode.json")
	data := strings.Replace(string(connectRead(t, file)), `"servers": {`, `"servers": {
    "sandboxed": {"type": "stdio", "command": "npx", "args": ["fs-server"], "sandboxEnabled": true},
    "socket": {"type": "ws", "url": "ws://localhost:9/mcp"},`, 1)
	writeFile(t, file, data)
	code, out, errOut := runMain(t, connectArgs(home, "-format", "json", "vscode")...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var rep connectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !slices.Equal(rep.Moved, []string{"Perplexity", "fetch", "github", "my-server"}) || len(rep.Kept) != 2 ||
		!strings.Contains(rep.Kept[0].Reason, "sandbox") || !strings.Contains(rep.Kept[1].Reason, `"ws"`) {
		t.Errorf("report: %+v", rep)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "my-server: dev not carried") }) {
		t.Errorf("no note for dev: %q", rep.Notes)
	}
	rewritten := string(connectRead(t, file))
	for _, kept := range []string{`"sandboxed": {"type": "stdio", "command": "npx", "args": ["fs-server"], "sandboxEnabled": true}`, `"socket": {"type": "ws", "url": "ws://localhost:9/mcp"}`} {
		if !strings.Contains(rewritten, kept) {
			t.Errorf("%s is not kept as it was:\n%s", kept, rewritten)
		}
	}

	// A file with nothing to move is refused.
	home, file, _ = connectHome(t, "windsurf", "windsurf.json")
	writeFile(t, file, `{"mcpServers": {"git": {"command": "py", "disabled": true}}}`)
	if code, _, errOut := runMain(t, connectArgs(home, "windsurf")...); code != exitFailure || !strings.Contains(errOut, "no server preflight can take over: git (it is disabled)") {
		t.Errorf("nothing to move: exit %d, stderr %q", code, errOut)
	}
	writeFile(t, file, `{"theme": "dark"}`)
	if code, _, errOut := runMain(t, connectArgs(home, "windsurf")...); code != exitFailure || !strings.Contains(errOut, "has no MCP servers (mcpServers) to move") {
		t.Errorf("no servers: exit %d, stderr %q", code, errOut)
	}
}

// TestConnectErrors: errors name the file and say what to do.
func TestConnectErrors(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"connect"}, exitUsage, "name one client: claude-desktop, claude-code, cursor, vscode, codex, gemini-cli or windsurf"},
		{[]string{"connect", "-home", home, "zed"}, exitUsage, `unknown client "zed"`},
		{[]string{"connect", "-home", home, "-undo", "-command", "/x", "cursor"}, exitUsage, "-command is for connect"},
		{connectArgs(home, "cursor"), exitCouldNotRun, filepath.Join(home, ".cursor", "mcp.json") + " does not exist: Cursor keeps no configuration there"},
	} {
		code, _, errOut := runMain(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}

	for _, tc := range []struct {
		client, content, want string
		code                  int
	}{
		{"cursor", "{\n  \"mcpServers\": {\"a\": }\n}", "line 2, column 24: not valid JSON", exitCouldNotRun},
		{"codex", "[mcp_servers.a]\ncommand = \n", "line 2, column", exitCouldNotRun},
		{"cursor", `{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, "mcpServers.a: args: expected a list of strings", exitCouldNotRun},
		{"cursor", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"Mcp-Session-Id": "1"}}}}`, "servers.a.headers.Mcp-Session-Id: set by the gateway", exitFailure},
		{"windsurf", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${file:/run/secret}"}}}}`, "${file:/run/secret} is an editor variable", exitFailure},
		{"claude-desktop", `{"mcpServers": {"preflight": {"command": "other"}}}`, `has a server named "preflight" that does not start preflight: rename it`, exitFailure},
	} {
		home := t.TempDir()
		file := lookupClient(tc.client).path(homeDirs{goos: runtime.GOOS, home: home})
		os.MkdirAll(filepath.Dir(file), 0o755)
		writeFile(t, file, tc.content)
		code, _, errOut := runMain(t, connectArgs(home, tc.client)...)
		if code != tc.code || !strings.Contains(errOut, file) || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s %q: exit %d, stderr %q; want exit %d naming the file and %q", tc.client, tc.content, code, errOut, tc.code, tc.want)
		}
		if exists(t, file+backupSuffix) {
			t.Errorf("%s %q: a backup was written", tc.client, tc.content)
		}
	}
}

// TestConnectHelp: preflight help connect names every client, the flags
// and the exit statuses.
func TestConnectHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runMain(t, "help", "connect")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range append(clientNames(), "-undo", "-dry-run", "-force", "-home", "-file", "-config", "-command", "Exit status: 0 done", ".preflight-backup") {
		if !strings.Contains(out, want) {
			t.Errorf("help connect does not mention %q", want)
		}
	}
}

// TestConnectServeRefusesItself: preflight serve -config FILE refuses a
// configuration with a server that runs preflight serve on FILE, directly
// or through another configuration, and accepts one that chains to
// another preflight.
func TestConnectServeRefusesItself(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.yaml")
	writeFile(t, loop, "servers:\n  me:\n    command: "+testPreflight+"\n    args: [serve, -stdio, -config, "+loop+"]\n")
	code, _, errOut := runMain(t, "serve", "-http", "127.0.0.1:0", "-config", loop)
	if code != exitFailure || !strings.Contains(errOut, "servers.me starts preflight serve -config "+loop) || !strings.Contains(errOut, "start itself without end") {
		t.Errorf("serve of a configuration that starts itself: exit %d, stderr %q", code, errOut)
	}

	// Relative to the server's cwd, and through a second configuration.
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeFile(t, a, "servers:\n  to-b:\n    command: preflight\n    args: [serve, -stdio, -config, b.yaml]\n    cwd: "+dir+"\n")
	writeFile(t, b, "servers:\n  to-a:\n    command: preflight.exe\n    args: [serve, -stdio, -config=a.yaml]\n    cwd: .\n")
	cfg, err := config.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := selfReferential(cfg, a); err == nil || !strings.Contains(err.Error(), "servers.to-b starts preflight serve -config "+b+", whose servers.to-a starts preflight serve -config "+a) {
		t.Errorf("a chain back to the file: %v", err)
	}

	// A gateway in front of another gateway is fine.
	writeFile(t, b, "servers:\n  files:\n    command: preflight-files\n")
	if cfg, err = config.Load(a); err != nil {
		t.Fatal(err)
	}
	if err := selfReferential(cfg, a); err != nil {
		t.Errorf("a chain to another configuration: %v", err)
	}
}

// TestConnectDiff: the unified diff of a few edits, as diff -u writes it.
func TestConnectDiff(t *testing.T) {
	t.Parallel()
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\nthirteen"
	want := `--- a
+++ b
@@ -1,6 +1,6 @@
 1
 2
-3
+three
 4
 5
 6
@@ -10,3 +10,4 @@
 10
 11
 12
+thirteen
\ No newline at end of file
`
	if got := unifiedDiff("a", "b", []byte(a), []byte(b)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedDiff("a", "b", []byte(a), []byte(a)); got != "" {
		t.Errorf("equal files: %q", got)
	}
}

// TestConnectShapes: files written in other shapes than the samples are
// edited in their own style and restored byte for byte: CRLF lines, JSON
// on one line, a client file that is a symbolic link, Codex servers
// written as dotted keys or in one [mcp_servers] table.
func TestConnectShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, client, content string
		want                  []string // in the rewritten file
	}{
		{"crlf", "claude-desktop", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\"\r\n    }\r\n  },\r\n  \"k\": 1\r\n}\r\n",
			[]string{"{\r\n  \"mcpServers\": {\r\n    \"preflight\": {\r\n      \"command\": \"" + testPreflight + "\",\r\n      \"args\": [\r\n        \"serve\",\r\n", "  },\r\n  \"k\": 1\r\n}\r\n"}},
		{"one line", "cursor", `{"mcpServers":{"a":{"command":"x"},"b":{"url":"https://b.example/mcp","disabled":true}},"k":[1,2]}`,
			[]string{`{"mcpServers":{"preflight":{"command":"` + testPreflight + `","args":["serve","-stdio","-config","`, `"b":{"url":"https://b.example/mcp","disabled":true}},"k":[1,2]}`}},
		{"tabs", "gemini-cli", "{\n\t\"mcpServers\": {\n\t\t\"a\": {\"command\": \"x\", \"timeout\": 900000}\n\t}\n}\n",
			[]string{"{\n\t\"mcpServers\": {\n\t\t\"preflight\": {\n\t\t\t\"command\": ", "\t\t\t\"timeout\": 900000\n\t\t}\n\t}\n}\n"}},
		{"dotted keys", "codex", "model = \"m\"\nmcp_servers.a.command = \"x\"\nmcp_servers.b.command = \"y\"\nmcp_servers.b.enabled = false\n\n[tui]\nnotifications = true\n",
			[]string{"model = \"m\"\nmcp_servers.b.command = \"y\"\nmcp_servers.b.enabled = false\n\n[tui]\nnotifications = true\n\n[mcp_servers.preflight]\n"}},
		{"one table", "codex", "[mcp_servers]\na = { command = \"x\", startup_timeout_sec = 5 }\nb.command = \"y\"\nb.enabled = false\n\n[tui]\nnotifications = true\n",
			[]string{"[mcp_servers]\nb.command = \"y\"\nb.enabled = false\n\n[tui]\nnotifications = true\n\n[mcp_servers.preflight]\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			file := lookupClient(tc.client).path(homeDirs{goos: runtime.GOOS, home: home})
			os.MkdirAll(filepath.Dir(file), 0o755)
			writeFile(t, file, tc.content)
			if code, out, errOut := runMain(t, connectArgs(home, tc.client)...); code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			got := string(connectRead(t, file))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the rewritten file does not hold %q:\n%s", w, got)
				}
			}
			if _, err := config.Load(connectDefaultConfig(tc.client, home)); err != nil {
				t.Errorf("config.Load: %v", err)
			}
			if code, _, errOut := runMain(t, "connect", "-home", home, "-undo", tc.client); code != exitOK || string(connectRead(t, file)) != tc.content {
				t.Errorf("undo: exit %d, stderr %q, file:\n%q", code, errOut, connectRead(t, file))
			}
		})
	}

	// A symbolic link stays a link; the file it names is edited.
	home := t.TempDir()
	target := filepath.Join(home, "dotfiles", "mcp.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	const content = `{"mcpServers": {"a": {"command": "x"}}}`
	writeFile(t, target, content)
	link := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if code, _, errOut := runMain(t, connectArgs(home, "cursor")...); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 || !strings.Contains(string(connectRead(t, target)), `"preflight"`) {
		t.Errorf("the link was replaced, or its file not edited")
	}
	if code, _, errOut := runMain(t, "connect", "-home", home, "-undo", "cursor"); code != exitOK || string(connectRead(t, target)) != content {
		t.Errorf("undo through the link: exit %d, stderr %q", code, errOut)
	}

	if !isTemporaryBuild(filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "preflight")) || isTemporaryBuild("/home/me/go-builds/preflight") {
		t.Errorf("isTemporaryBuild")
	}
}
