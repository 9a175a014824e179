package gateway_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
)

func noEnv(string) (string, bool) { return "", false }

// TestOptionsFromClientFiles maps the configurations that the editors'
// files of gateway/config/testdata/clients become (Claude Desktop, Claude
// Code, Cursor, VS Code) onto gateway options without error, one upstream
// per server, and checks the Claude Desktop one field by field.
func TestOptionsFromClientFiles(t *testing.T) {
	goldens, _ := filepath.Glob(filepath.Join("config", "testdata", "clients", "*.golden.yaml"))
	if len(goldens) < 4 {
		t.Fatalf("%d golden client files", len(goldens))
	}
	for _, path := range goldens {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(path, b, noEnv)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		opts, err := gateway.OptionsFromConfig(cfg)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(opts.Upstreams) != len(cfg.Servers) || opts.Resolver == nil {
			t.Errorf("%s: %d upstreams for %d servers, resolver %v", path, len(opts.Upstreams), len(cfg.Servers), opts.Resolver)
		}
		if _, err := gateway.New(opts); err != nil {
			t.Errorf("%s: gateway.New: %v", path, err)
		}
		if !strings.HasPrefix(filepath.Base(path), "claude_desktop") {
			continue
		}
		want := []gateway.UpstreamSpec{
			{Name: "filesystem", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop", "/Users/alice/Downloads"}},
			{Name: "github", Transport: "stdio", Command: "docker", Args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "github_pat_example"}},
			{Name: "memory", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: map[string]string{"MEMORY_FILE_PATH": "/Users/alice/memory.jsonl"}},
		}
		for i := range want {
			w := &want[i]
			w.Prefix, w.Separator = w.Name, config.DefaultSeparator
			w.ConnectTimeout, w.ProbeTimeout, w.CallTimeout, w.StopGrace = config.DefaultConnectTimeout, config.DefaultDiscoverTimeout, config.DefaultCallTimeout, config.DefaultShutdownTimeout
		}
		for i := range opts.Upstreams {
			opts.Upstreams[i].Dir = "" // the config file's directory
		}
		if !reflect.DeepEqual(opts.Upstreams, want) {
			t.Errorf("claude desktop upstreams:\n got %+v\nwant %+v", opts.Upstreams, want)
		}
	}
}

// TestOptionsFromConfigRefuses: what the gateway cannot do yet is an
// error naming the key, not silently dropped.
func TestOptionsFromConfigRefuses(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"servers:\n  a: {command: x, prefix: \"\"}\n  b: {command: y}\n", "servers.a.prefix"},
		{"servers:\n  a: {command: x, pack: nosuch}\n", `servers.a.pack: "nosuch" is not a rules pack shipped with the gateway (allowed: true, false, everything, filesystem, github`},
		{"servers:\n  a:\n    command: x\n    rules:\n      - {name: r, tool: t, when: \"args.\", annotations: {readOnlyHint: true}}\n", `rule "r"`},
	} {
		cfg, err := config.Parse("test.yaml", []byte(tc.yaml), noEnv)
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		_, err = gateway.OptionsFromConfig(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}
