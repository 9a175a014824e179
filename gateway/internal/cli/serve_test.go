package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

func TestServeHelp(t *testing.T) {
	code, out, _ := runMain(t, "help", "serve")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	golden(t, "help-serve.golden", out)
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeBuiltin runs "preflight serve" with the built-in setup on a
// fresh data directory: it prints the URL, serves both example servers'
// tools prefixed, answers calls in both eras with one JSON log record per
// call, reports health, and stops cleanly (exit 0) when interrupted.
func TestServeBuiltin(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"serve", "-http", "127.0.0.1:0", "-data", data}, strings.NewReader(""), outW, &stderr)
		outW.Close()
	}()

	// Read what it prints until it says how to stop it.
	var printed strings.Builder
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Stop with") {
			break
		}
	}
	go io.Copy(io.Discard, outR)
	out := printed.String()
	m := regexp.MustCompile(`serving MCP at (http://127\.0\.0\.1:\d+/mcp)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no URL printed:\n%s\nstderr:\n%s", out, stderr.String())
	}
	url := m[1]
	for _, want := range []string{"files    up", "folders  up", "4 tools", "claude mcp add --transport http preflight " + url} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); err != nil {
		t.Errorf("the data directory was not seeded: %v", err)
	}

	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		r := p.Call(t, "tools/list", nil)
		var names []string
		for _, tl := range r.Result["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		if got := strings.Join(names, ","); got != "files__manage_files,folders__delete_folder,folders__describe_folder,folders__rename_folder" {
			t.Errorf("%s tools = %s", p.Version, got)
		}
		r = p.Call(t, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}})
		if r.Error != nil || !strings.Contains(string(r.Raw), "Notes kept by the manage_files example") {
			t.Errorf("%s call: %s", p.Version, r.Raw)
		}
		p.Close()
	}

	resp, err := http.Get(strings.TrimSuffix(url, gateway.MCPPath) + gateway.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	var h gateway.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || h.Status != "ok" || len(h.Upstreams) != 2 || h.Tools != 4 {
		t.Errorf("health: %d %+v %v", resp.StatusCode, h, err)
	}

	cancel()
	if code := <-exited; code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}

	// One JSON record per call, with what operations need.
	var calls []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == "call" {
			calls = append(calls, rec)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d call records, want 2:\n%s", len(calls), stderr.String())
	}
	for i, era := range []string{"2026-07-28", "2025-11-25"} {
		c := calls[i]
		if c["server"] != "files" || c["tool"] != "files__manage_files" || c["era"] != era || c["outcome"] != "ok" {
			t.Errorf("call record %d = %v", i, c)
		}
		if _, ok := c["latencyMs"].(float64); !ok {
			t.Errorf("call record %d has no latency: %v", i, c)
		}
	}
}

func TestServeUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra"}, "serve takes no arguments"},
		{[]string{"serve", "-log-level", "loud"}, `-log-level "loud"`},
		{[]string{"serve", "-config", "x.yaml", "-data", "d"}, "-data is for the built-in setup"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestServeConfigSeam checks that -config goes through the command's
// configuration watcher and that a first load that fails is the command's
// error.
func TestServeConfigSeam(t *testing.T) {
	var asked string
	c := &serveCmd{addr: addrFlag{value: "127.0.0.1:0"}, config: "servers.json", logLevel: "info",
		watch: func(_ context.Context, path string, _ *config.WatchOptions, _ func(*config.Config, error)) error {
			asked = path
			return io.ErrUnexpectedEOF
		}}
	err := c.run(context.Background(), &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: newTermWriter(io.Discard, textOutput)}, invocation{})
	if asked != "servers.json" || err == nil || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Errorf("watcher asked for %q, run returned %v", asked, err)
	}
}
