package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
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
		opts, err := setup.Options(context.Background(), cfg, nil)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(opts.Upstreams) != len(cfg.Servers) || opts.Resolver == nil {
			t.Errorf("%s: %d upstreams for %d servers, resolver %v", path, len(opts.Upstreams), len(cfg.Servers), opts.Resolver)
		}
		if g, err := gateway.New(opts); err != nil {
			t.Errorf("%s: gateway.New: %v", path, err)
		} else if err := g.Close(); err != nil { // closes the pin store
			t.Errorf("%s: Close: %v", path, err)
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
		_, err = setup.Options(context.Background(), cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}

// TestOptionsFromConfigAuth: the auth section authenticates the clients
// of the gateway it configures: no token is refused with the challenge,
// the configured token is served. Without auth, serving on a
// non-loopback address is refused.
func TestOptionsFromConfigAuth(t *testing.T) {
	token, entry, err := auth.NewToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	yaml := "auth:\n  tokens:\n    - {principal: alice, sha256: \"" + entry.SHA256 + "\"}\nservers:\n  files: {url: \"" + filesServer(t) + "\"}\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil || opts.Auth == nil || opts.Auth.Anonymous() {
		t.Fatalf("options: %+v, %v", opts, err)
	}
	_, url := startGateway(t, opts)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"pft_not-the-token", http.StatusUnauthorized}, {token, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %d %q, want %d", tc.token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.want)
		}
	}

	g, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: "http://127.0.0.1:1/mcp", Lazy: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := g.Serve(t.Context(), ln); err == nil || !strings.Contains(err.Error(), "without authentication") {
		t.Errorf("serving on %s without auth: %v", ln.Addr(), err)
	}
}

// TestOptionsFromConfigPins: the pins section becomes Options.Pinner over
// its store, with each server's pin as its mode; a configuration whose
// servers all have pin off opens no store.
func TestOptionsFromConfigPins(t *testing.T) {
	dir := t.TempDir()
	yaml := "servers:\n  a: {command: x, trust: untrusted}\n  b: {command: y}\n  c: {command: z, pin: off}\npins:\n  path: pins.db\n"
	cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := opts.Pinner
	if p == nil {
		t.Fatal("no Pinner")
	}
	for server, want := range map[string]pin.Mode{"a": pin.ModeStrict, "b": pin.ModeWarn, "c": pin.ModeOff, "unknown": pin.ModeStrict} {
		if got := p.Mode(server); got != want {
			t.Errorf("mode of %s = %s, want %s", server, got, want)
		}
	}
	if _, err := p.Check(context.Background(), "a", []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// The pin is in the file the section names, for preflight pins to see.
	s, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(dir, "pins.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.Get(context.Background(), "a", "t"); err != nil || r.State != pin.StatePinned {
		t.Errorf("the pin in pins.db: %+v, %v", r, err)
	}

	cfg, err = config.Parse(filepath.Join(dir, "off.yaml"), []byte("servers:\n  a: {command: x, pin: off}\npins:\n  path: off.db\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = setup.Options(context.Background(), cfg, nil); err != nil || opts.Pinner != nil {
		t.Errorf("every pin off: %v, Pinner %v", err, opts.Pinner)
	}
	if opts != nil {
		opts.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "off.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("every pin off, yet the store was opened: %v", err)
	}

	// A store that cannot be opened is an error naming the section.
	cfg, err = config.Parse(filepath.Join(dir, "bad.yaml"), []byte("servers:\n  a: {command: x}\npins:\n  store: postgres\n  url: \"postgres://preflight:hunter2@127.0.0.1:1/none?connect_timeout=5\"\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Options(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "configuration: pins") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unreachable store: %v", err)
	}
}

// TestDecisionsFromConfig maps the decisions section (mode, rules,
// approval) and the servers' modes, and names a rule whose expression does
// not compile.
func TestDecisionsFromConfig(t *testing.T) {
	parse := func(src string) *config.Config {
		t.Helper()
		cfg, err := config.Parse("gateway.yaml", []byte(src), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := parse(`
servers:
  files: {command: preflight-files, decisions: dry-run}
  github: {command: github-mcp}
decisions:
  rules:
    - name: no-force-push
      servers: [github]
      tools: [push*]
      when: args.force == true
      decision: deny
      reason: force pushes are not allowed
    - name: merges
      tools: [merge_pull_request]
      when: principal != "release-bot"
      decision: confirm
      approval: human
`)
	opts, err := optionsOf(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := &stage.DecideOptions{
		Mode:    stage.Enforce,
		Servers: map[string]stage.Mode{"files": stage.DryRun},
		Rules: []stage.DecisionRule{
			{Name: "no-force-push", Servers: []string{"github"}, Tools: []string{"push*"}, When: "args.force == true", Verdict: call.Deny, Reason: "force pushes are not allowed"},
			{Name: "merges", Tools: []string{"merge_pull_request"}, When: `principal != "release-bot"`, Verdict: call.Confirm, OutOfBand: true},
		},
	}
	if !reflect.DeepEqual(opts.Decisions, want) {
		t.Errorf("decisions = %+v\nwant %+v", opts.Decisions, want)
	}

	_, err = setup.Options(context.Background(), parse(`
servers:
  files: {command: preflight-files}
decisions:
  mode: dry-run
  rules:
    - {name: typo, when: "args.path.startsWith(", decision: deny}
    - {name: not-bool, when: "tool", decision: allow}
`), nil)
	for _, want := range []string{`configuration: decisions: rules[0] ("typo"): when: expression does not compile`, `rules[1] ("not-bool"): when: expression is of type string, not bool`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// TestOptionsFromConfigRetryMetrics: the retry and metrics keys become
// Options.Retry and Options.Metrics; left out, both keep the gateway's
// defaults (nil: retries and metrics on).
func TestOptionsFromConfigRetryMetrics(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte("servers:\n  a: {command: x}\nretry:\n  attempts: 1\n  backoff: 50ms\n  maxBackoff: 1s\n  within: 10s\n  budget: 5\n  refill: 2s\nmetrics:\n  enabled: false\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := optionsOf(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := &forward.RetryPolicy{Attempts: 1, Initial: 50 * time.Millisecond, Max: time.Second, Within: 10 * time.Second, Budget: 5, Refill: 2 * time.Second}
	if !reflect.DeepEqual(opts.Retry, want) || opts.Metrics == nil || !opts.Metrics.Off {
		t.Errorf("retry %+v, metrics %+v", opts.Retry, opts.Metrics)
	}
	cfg, err = config.Parse("test.yaml", []byte("servers:\n  a: {command: x}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = optionsOf(t, cfg); err != nil || opts.Retry != nil || opts.Metrics != nil {
		t.Errorf("defaults: retry %+v, metrics %+v, %v", opts.Retry, opts.Metrics, err)
	}
}

// optionsOf maps cfg with OptionsFromConfig and closes what it opened when
// the test ends.
func optionsOf(t *testing.T, cfg *config.Config) (*gateway.Options, error) {
	opts, err := setup.Options(context.Background(), cfg, nil)
	if opts != nil {
		t.Cleanup(func() { opts.Close() })
	}
	return opts, err
}
