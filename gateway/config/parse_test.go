package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight"
)

// clientFiles are the editors' files of testdata/clients, with the path
// each would have on a user's machine (which ${workspaceFolder} and
// relative paths depend on).
var clientFiles = []struct{ file, path string }{
	{"claude_desktop_config.json", "/home/alice/.config/Claude/claude_desktop_config.json"},
	{"claude_code.mcp.json", "/home/alice/shop/.mcp.json"},
	{"cursor.mcp.json", "/home/alice/shop/.cursor/mcp.json"},
	{"vscode.mcp.json", "/home/alice/shop/.vscode/mcp.json"},
}

// TestClients reads the files editors write, unchanged, and compares the
// canonical config they become with testdata/clients/*.golden.yaml
// (rewritten by go test -update). The goldens are themselves canonical
// files that read back to the same config.
func TestClients(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "clients", "*.json"))
	if len(files) != len(clientFiles) {
		t.Errorf("testdata/clients holds %d inputs, the table %d", len(files), len(clientFiles))
	}
	for _, cf := range clientFiles {
		t.Run(cf.file, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(cf.path, read(t, filepath.Join("clients", cf.file)), testEnv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "clients", strings.TrimSuffix(cf.file, ".json")+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", golden, got, want)
			}
			back, err := Parse(cf.path, want, testEnv)
			if err != nil {
				t.Fatalf("the golden file does not parse: %v", err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Errorf("the golden file reads back as\n%+v\nwant\n%+v", back, c)
			}
		})
	}
}

// TestClientDetails checks what the goldens show, one fact at a time, so
// that a golden rewritten by mistake cannot hide a regression.
func TestClientDetails(t *testing.T) {
	t.Parallel()
	parse := func(i int) *Config {
		t.Helper()
		c, err := Parse(clientFiles[i].path, read(t, filepath.Join("clients", clientFiles[i].file)), testEnv)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	desktop, code, cursor, vscode := parse(0), parse(1), parse(2), parse(3)

	if s := desktop.Servers["memory"]; s.Type != TransportStdio || s.Command != "npx" || s.Env["MEMORY_FILE_PATH"] != "/Users/alice/memory.jsonl" || s.Prefix != "memory" {
		t.Errorf("Claude Desktop memory = %+v", s)
	}
	if len(desktop.Servers) != 3 {
		t.Errorf("Claude Desktop: %d servers, want 3 (globalShortcut and preferences are the app's)", len(desktop.Servers))
	}

	if s := code.Servers["asana"]; s.Type != TransportSSE || s.URL != "https://mcp.asana.com/sse" {
		t.Errorf("Claude Code asana = %+v", s)
	}
	if s := code.Servers["api-server"]; s.URL != "https://api.example.com/mcp" || s.Headers["Authorization"] != "Bearer key-123" {
		t.Errorf("Claude Code api-server = %+v (want the ${API_BASE_URL:-...} default and ${API_KEY})", s)
	}
	if s := code.Servers["airtable"]; s.Env["DEBUG"] != "false" || s.Env["AIRTABLE_API_KEY"] != "pat-airtable" {
		t.Errorf("Claude Code airtable env = %v", s.Env)
	}

	if s := cursor.Servers["docs"]; s.Type != TransportHTTP || s.Headers["Authorization"] != "Bearer docs-789" {
		t.Errorf("Cursor docs = %+v (a bare url is streamable HTTP; ${env:DOCS_TOKEN})", s)
	}
	if s := cursor.Servers["local-tools"]; s.Args[0] != "/home/alice/shop/tools/server.py" || s.Args[2] != "/home/alice" || s.EnvFile != "/home/alice/shop/.env" {
		t.Errorf("Cursor local-tools = %+v (${workspaceFolder} is the folder holding .cursor/)", s)
	}
	if s := cursor.Servers["streaming"]; s.Type != TransportHTTP {
		t.Errorf("Cursor streaming type = %q, want http for streamable-http", s.Type)
	}

	if s := vscode.Servers["Perplexity"]; s.Env["PERPLEXITY_API_KEY"] != "pplx-example" || s.Env["REGION"] != "eu-west-1" || s.Env["PORT"] != "8080" {
		t.Errorf("VS Code Perplexity env = %v (input from PERPLEXITY_KEY; input default; number as text)", s.Env)
	}
	if s := vscode.Servers["my-server"]; s.Cwd != "/home/alice/shop" {
		t.Errorf("VS Code my-server cwd = %q", s.Cwd)
	}
}

// TestDefaults checks every default on the smallest file.
func TestDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "/etc/preflight/gateway.yaml", "servers:\n  memory:\n    command: npx\n")
	want := &Config{
		Servers: map[string]*Server{"memory": {
			Type:      TransportStdio,
			Command:   "npx",
			Prefix:    "", // one server: names unchanged
			Separator: "__",
			Connect:   ConnectEager,
			Timeouts: Timeouts{
				Connect:  Duration(time.Minute),
				Discover: Duration(5 * time.Second),
				Call:     Duration(5 * time.Minute),
				Shutdown: Duration(5 * time.Second),
			},
			Trust:     Trusted,
			Pack:      PackAuto,
			Pin:       PinWarn,
			Decisions: DecisionsEnforce,
			Flow:      ServerFlowOn,
		}},
		Disclosure: Disclosure{Store: StoreMemory, TTL: Duration(24 * time.Hour)},
		Pins:       Pins{Store: PinStoreSQLite},
		Vault:      Vault{Store: PinStoreSQLite},
		Audit: Audit{Store: AuditSQLite, OnUnavailable: AuditProceed,
			Levels: AuditLevels{Read: AuditLevelSummary, Write: AuditLevelFull, External: AuditLevelFull, Delete: AuditLevelFull}},
		Redaction: Redaction{Level: "confidential", Withhold: "restricted", Sensitive: "confidential"},
		Decisions: Decisions{Mode: DecisionsEnforce},
		Flow:      Flow{Action: FlowConfirm, Sensitivity: "restricted", TTL: Duration(time.Hour), Max: 4096},
	}
	if !reflect.DeepEqual(c, want) {
		got, _ := Marshal(c)
		w, _ := Marshal(want)
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
}

func TestServerDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "/etc/preflight/gateway.yaml", `
servers:
  a b:
    url: http://127.0.0.1:1/mcp
  plain:
    command: x
    prefix: ""
  own:
    command: x
    prefix: mine
    separator: .
    disclose: false
  from-env:
    command: x
    connect: ${CONNECT}
    disclose: ${ON}
disclosure: {enabled: true}
redis: {url: "redis://127.0.0.1:6379"}
approvals: {pageUrl: "https://mcp.example.com/ui"}
`)
	for name, want := range map[string]struct {
		prefix, sep string
		disclose    bool
		connect     Connect
	}{
		"a b":      {"a_b", "__", true, ConnectEager},
		"plain":    {"", "__", true, ConnectEager},
		"own":      {"mine", ".", false, ConnectEager},
		"from-env": {"from-env", "__", true, ConnectLazy},
	} {
		s := c.Servers[name]
		if s.Prefix != want.prefix || s.Separator != want.sep || s.Disclose != want.disclose || s.Connect != want.connect {
			t.Errorf("%s: prefix %q separator %q disclose %v connect %v, want %+v", name, s.Prefix, s.Separator, s.Disclose, s.Connect, want)
		}
	}
	if c.Servers["a b"].Type != TransportHTTP {
		t.Errorf("a url alone is %q, want http", c.Servers["a b"].Type)
	}
	if c.Redis.Prefix != DefaultRedisPrefix {
		t.Errorf("redis prefix %q", c.Redis.Prefix)
	}
}

// TestInterpolation checks ${...} in each format.
func TestInterpolation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"${API_KEY}", "key-123"},
		{"${env:API_KEY}", "key-123"},
		{"a-${API_KEY}-${DOCS_TOKEN}-b", "a-key-123-docs-789-b"},
		{"${UNSET:-fallback}", "fallback"},
		{"${EMPTY:-fallback}", "fallback"},
		{"${EMPTY}", ""},
		{"${API_KEY:-fallback}", "key-123"},
		{"${env:UNSET:-x}", "x"},
		{"${UNSET:-}", ""},
		{"$${API_KEY}", "${API_KEY}"},
		{"$$${API_KEY}", "$${API_KEY}"}, // $ then the escape $${
		{"$API_KEY $$ $", "$API_KEY $$ $"},
		{"${UNSET:-a:-b}", "a:-b"},
	} {
		c := mustParse(t, "c.yaml", "servers:\n  s:\n    command: x\n    args: ['"+tc.in+"']\n")
		if got := c.Servers["s"].Args[0]; got != tc.want {
			t.Errorf("%s = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Numbers and booleans in args, env and headers are read as text.
	c := mustParse(t, "c.yaml", "servers:\n  s:\n    command: x\n    args: [--port, 8080, 1.50, true]\n    env: {N: 0x1F}\n")
	if s := c.Servers["s"]; !reflect.DeepEqual(s.Args, []string{"--port", "8080", "1.50", "true"}) || s.Env["N"] != "0x1F" {
		t.Errorf("args %q env %q", s.Args, s.Env)
	}
	// Keys are never interpolated.
	c = mustParse(t, "c.yaml", "servers:\n  s:\n    command: x\n    env: {'${API_KEY}': v}\n")
	if _, ok := c.Servers["s"].Env["${API_KEY}"]; !ok {
		t.Errorf("env = %v", c.Servers["s"].Env)
	}
	// A boolean from the environment must still be a boolean.
	if _, err := Parse("c.yaml", []byte("servers:\n  s:\n    command: x\n    disclose: ${WORD}\n"), testEnv); err == nil ||
		!strings.Contains(err.Error(), `servers.s.disclose: expected true or false, found the string "yes"`) {
		t.Errorf("disclose: ${WORD} = %v", err)
	}
	// Editor variables mean nothing in the canonical format, and are
	// read in editors' files.
	if _, err := Parse("/p/c.yaml", []byte("servers:\n  s:\n    command: ${userHome}/x\n"), testEnv); err == nil {
		t.Error("${userHome} in a canonical file was resolved")
	}
	c = mustParse(t, "/p/mcp.json", `{"mcpServers": {"s": {"command": "${userHome}/x", "args": ["${workspaceFolderBasename}", "${pathSeparator}"]}}}`)
	if s := c.Servers["s"]; s.Command != "/home/alice/x" || s.Args[0] != "p" || s.Args[1] != string(filepath.Separator) {
		t.Errorf("editor variables: %+v", s)
	}
	// ${input:...} is VS Code's only.
	if _, err := Parse("/p/mcp.json", []byte(`{"mcpServers": {"s": {"command": "${input:x}"}}}`), testEnv); err == nil ||
		!strings.Contains(err.Error(), "${input:x} is an editor variable that cannot be resolved outside the editor") {
		t.Errorf("${input:x} in mcpServers: %v", err)
	}
	// A VS Code input named like an environment variable.
	c = mustParse(t, "/p/.vscode/mcp.json", `{"inputs": [{"id": "API_KEY", "type": "promptString"}], "servers": {"s": {"type": "stdio", "command": "x", "args": ["${input:API_KEY}"]}}}`)
	if got := c.Servers["s"].Args[0]; got != "key-123" {
		t.Errorf("${input:API_KEY} = %q", got)
	}
}

// TestFormats checks how the format is told from the content.
func TestFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		wantErr    string // empty: parses
	}{
		// The canonical format, in YAML and in JSON.
		{"c.yaml", "servers: {s: {command: x, trust: untrusted}}", ""},
		{"c.json", `{"servers": {"s": {"command": "x", "trust": "untrusted"}}, "listen": {}}`, ""},
		{"c", `{"$schema": "x", "servers": {"s": {"command": "x"}}}`, ""},
		// A JSON file with servers alone is VS Code's: trust is not a VS Code key.
		{"c.json", `{"servers": {"s": {"command": "x", "trust": "untrusted"}}}`, "allowed in a VS Code server"},
		// A .yaml file is YAML even when it looks like JSON.
		{"c.yaml", `{"servers": {"s": {"command": "x", "trust": "untrusted"}}}`, ""},
		// mcpServers wins, in any syntax; the editor's other keys are ignored.
		{"c.yaml", "mcpServers: {s: {command: x}}\nlisten: whatever\n", ""},
		{"c.json", `{"mcpServers": {"s": {"command": "x"}}, "servers": 1}`, ""},
		// A byte order mark and comments before JSON.
		{"c", "\uFEFF// settings\n/* more */ {\"mcpServers\": {\"s\": {\"command\": \"x\",},},}", ""},
		{"c", "/* never closed", "expected a mapping with servers, found the string"},
		{"c.json", "{\"mcpServers\": {\"s\": {\"command\": \"x\"}}} /* never closed", "JSON: unterminated comment"},
		{"c.json", `{"mcpServers": {"s": {"command": "x"}}} {}`, "JSON: data after the top-level value"},
	} {
		_, err := Parse(tc.name, []byte(tc.text), testEnv)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s %q: %v", tc.name, tc.text, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s %q: %v, want an error with %q", tc.name, tc.text, err, tc.wantErr)
		}
	}
}

// TestYAMLFeatures checks anchors, aliases and merge keys, which YAML
// users write to share settings between servers, and the top-level x-
// keys that hold them.
func TestYAMLFeatures(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "c.yaml", `
x-defaults: &defaults
  trust: untrusted
  connect: lazy
servers:
  a:
    <<: *defaults
    command: x
  b:
    <<: [*defaults, {disclose: true}]
    command: y
    connect: eager
`)
	a, b := c.Servers["a"], c.Servers["b"]
	if a.Trust != Untrusted || a.Connect != ConnectLazy || b.Trust != Untrusted || b.Connect != ConnectEager || !b.Disclose {
		t.Errorf("a = %+v\nb = %+v", a, b)
	}
}

// TestPinDefault checks that pinning defaults to strict for an untrusted
// server and to warn for a trusted one, and that a file's own value wins.
func TestPinDefault(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "c.yaml", `
servers:
  own: {command: x}
  foreign: {command: y, trust: untrusted}
  relaxed: {command: z, trust: untrusted, pin: warn}
  loose: {command: w, pin: off}
  careful: {command: v, pin: strict}
`)
	for name, want := range map[string]Pin{"own": PinWarn, "foreign": PinStrict, "relaxed": PinWarn, "loose": PinOff, "careful": PinStrict} {
		if got := c.Servers[name].Pin; got != want {
			t.Errorf("%s: pin %q, want %q", name, got, want)
		}
	}
}

// TestRoundTrip checks that Marshal writes what Parse reads back to an
// equal config, on the examples.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "examples", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse("/abs/"+f, data, testEnv)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("/abs/"+f, out, testEnv)
		if err != nil {
			t.Fatalf("%s: Marshal wrote what Parse refuses: %v\n%s", f, err, out)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%s: read back differs:\n%s", f, out)
		}
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	s := &Server{Include: []string{"get_*", "list_*"}, Exclude: []string{"list_secrets"}}
	for tool, want := range map[string]bool{"get_me": true, "list_issues": true, "list_secrets": false, "delete_file": false} {
		if got := s.Allows(tool); got != want {
			t.Errorf("Allows(%q) = %v", tool, got)
		}
	}
	if !(&Server{}).Allows("anything") {
		t.Error("no filters must allow every tool")
	}
}

func TestAnnotationsApply(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "c.yaml", `
servers:
  s:
    command: x
    overrides:
      t:
        annotations: {readOnlyHint: true, destructiveHint: false}
`)
	got := c.Servers["s"].Overrides["t"].Annotations.Apply(preflight.DefaultAnnotations)
	if want := (preflight.Annotations{ReadOnlyHint: true, OpenWorldHint: true}); got != want {
		t.Errorf("Apply = %+v, want %+v (explicit false kept, unset left as it was)", got, want)
	}
}

func TestHintsConversion(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "c.yaml", `
servers:
  s:
    command: x
    overrides:
      t:
        hints: {effect: delete, requiresConfirmation: true, idempotent: false, resultSensitivity: confidential}
`)
	h := c.Servers["s"].Overrides["t"].Hints.Hints()
	if h.Effect != "delete" || !*h.RequiresConfirmation || *h.Idempotent || h.ResultSensitivity != "confidential" {
		t.Errorf("hints = %+v", h)
	}
	if err := h.Validate(); err != nil {
		t.Error(err)
	}
}

// TestPack reads a server's pack as true (the default), false, or a name,
// and writes it back the same way.
func TestPack(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "/etc/preflight/gateway.yaml", `
servers:
  auto: {command: x}
  on: {command: x, pack: true}
  off: {command: x, pack: false}
  named: {command: x, pack: github}
  from-env: {command: x, pack: "${UNSET_PACK:-false}"}
`)
	for name, want := range map[string]Pack{"auto": PackAuto, "on": PackAuto, "off": PackOff, "named": "github", "from-env": PackOff} {
		if got := c.Servers[name].Pack; got != want {
			t.Errorf("%s: pack %q, want %q", name, got, want)
		}
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pack: true", "pack: false", "pack: github"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Marshal lacks %q:\n%s", want, out)
		}
	}
	back := mustParse(t, "/etc/preflight/gateway.yaml", string(out))
	if !reflect.DeepEqual(back.Servers, c.Servers) {
		t.Errorf("read back differs:\n%s", out)
	}
}

// TestListenSessionCaps: listen.maxSessions and maxSessionsPerPrincipal
// are read, and a cap of 0 or past MaxSessionsCap is refused by its key.
func TestListenSessionCaps(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "g.yaml", "listen:\n  maxSessions: 500\n  maxSessionsPerPrincipal: 8\nservers:\n  m:\n    command: npx\n")
	if c.Listen.MaxSessions != 500 || c.Listen.MaxSessionsPerPrincipal != 8 {
		t.Errorf("listen = %+v", c.Listen)
	}
	for _, bad := range []string{"maxSessions: 0", "maxSessionsPerPrincipal: 0", "maxSessionsPerPrincipal: 100001"} {
		_, err := Parse("g.yaml", []byte("listen:\n  "+bad+"\nservers:\n  m:\n    command: npx\n"), nil)
		key := "listen." + bad[:strings.Index(bad, ":")]
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "want 1 to 100000") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
