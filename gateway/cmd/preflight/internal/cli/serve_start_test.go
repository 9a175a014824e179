package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitBriefly makes serve wait at most d for its upstreams before it
// prints what it serves, for the rest of the test.
func waitBriefly(t *testing.T, d time.Duration) {
	old := serveReadyTimeout
	serveReadyTimeout = d
	t.Cleanup(func() { serveReadyTimeout = old })
}

// stdioConfig writes a Claude Desktop configuration whose one server is
// sh -c script, and returns its path.
func stdioConfig(t *testing.T, script string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"keys": map[string]any{"command": "sh", "args": []string{"-c", script}}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, path, string(b))
	return path
}

// TestServeUpstreamStderr: an upstream that fails to start shows, in the
// banner, its state, its last error and the last lines of its own
// stderr, without their control characters.
func TestServeUpstreamStderr(t *testing.T) {
	waitBriefly(t, 2*time.Second)
	cfg := stdioConfig(t, `echo starting >&2; printf 'boom: \033[31mmissing API_KEY\n' >&2; exit 1`)
	_, out, stderr, stop := runServe(t, "-http", "127.0.0.1:0", "-config", cfg)
	var row, tail []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "  keys "):
			row = strings.Fields(l)
		case row != nil && strings.HasPrefix(strings.TrimSpace(l), "stderr: "):
			tail = append(tail, strings.TrimSpace(l))
		}
	}
	if len(row) < 6 || row[1] != "down" && row[1] != "connecting" {
		t.Errorf("no row of the failed upstream with its error:\n%s", out)
	}
	if !strings.Contains(strings.Join(tail, "\n"), "stderr: boom: missing API_KEY") || len(tail) > 3 {
		t.Errorf("stderr lines %q; want the last ones, boom's among them:\n%s", tail, out)
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("a control character got through:\n%q", out)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
}

// TestServeOffLoopbackRefused: serving HTTP off loopback without
// authentication is refused before anything starts or is printed: no
// banner, no data directory, no upstream started; exit 2 (a usage error),
// with the way out.
func TestServeOffLoopbackRefused(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	code, out, errOut := runMain(t, "serve", "-http", "0.0.0.0:0", "-data", data)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "serving 0.0.0.0:0 without authentication") ||
		!strings.Contains(errOut, "-config FILE") {
		t.Errorf("built-in setup: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the data directory was made: %v", err)
	}

	started := filepath.Join(t.TempDir(), "started")
	cfg := stdioConfig(t, "touch "+started+"; exec sleep 60")
	code, out, errOut = runMain(t, "serve", "-http", "0.0.0.0:0", "-config", cfg)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "without auth.tokens or auth.oauth") {
		t.Errorf("configuration without auth: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(started); !os.IsNotExist(err) {
		t.Errorf("the upstream was started: %v", err)
	}
}
