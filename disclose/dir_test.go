package disclose_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/disclose"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	// Write then rename, as editors and deploy tools do, so the watcher
	// never sees a half-written file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// reloads records a Dir's reloads for a test: the last error, and a
// wake-up for waiters that never blocks the watcher.
type reloads struct {
	mu      sync.Mutex
	lastErr error
	wake    chan struct{}
}

func (r *reloads) onReload(_ string, err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reloads) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// openDir opens dir, recording its reloads.
func openDir(t *testing.T, dir string, poll time.Duration) (*disclose.Dir, *reloads) {
	t.Helper()
	r := &reloads{wake: make(chan struct{}, 1)}
	d, err := disclose.OpenDir(dir, &disclose.DirOptions{Poll: poll, OnReload: r.onReload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, r
}

// waitFor waits, reload by reload, until ok holds.
func waitFor(t *testing.T, r *reloads, ok func() bool) {
	t.Helper()
	for !ok() {
		<-r.wake
	}
}

// TestDir: one file per tool, reloaded on change (fsnotify and polling),
// a bad file keeps the previous details, a removed file removes them, and
// the version follows the content.
func TestDir(t *testing.T) {
	for _, mode := range []struct {
		name string
		poll time.Duration
	}{{"watch", 0}, {"poll", time.Millisecond}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "echo.json", `{"usage_guidance": "v1", "examples": [{"input": {"message": "hi"}}]}`)
			writeFile(t, dir, "notes.txt", `ignored`)
			d, ch := openDir(t, dir, mode.poll)
			if got := d.Details("echo"); got == nil || got.UsageGuidance != "v1" || len(got.Examples) != 1 {
				t.Fatalf("echo details %+v", got)
			}
			if tools := d.Tools(); len(tools) != 1 || tools[0] != "echo" {
				t.Errorf("tools %v", tools)
			}
			v1 := d.Version()

			writeFile(t, dir, "echo.json", `{"usage_guidance": "v2"}`)
			waitFor(t, ch, func() bool { return d.Version() != v1 })
			if ch.err() != nil || d.Details("echo").UsageGuidance != "v2" {
				t.Fatalf("after change: %v %+v", ch.err(), d.Details("echo"))
			}

			v2 := d.Version()
			writeFile(t, dir, "echo.json", `{"usage_guidance": `)
			waitFor(t, ch, func() bool { return ch.err() != nil })
			if !strings.Contains(ch.err().Error(), "echo.json") || d.Details("echo").UsageGuidance != "v2" || d.Version() != v2 {
				t.Fatalf("bad file: %v, details %+v", ch.err(), d.Details("echo"))
			}

			writeFile(t, dir, "get_data.json", `{"name": "get_data", "error_guidance": {"E": "x"}}`)
			waitFor(t, ch, func() bool { return d.Details("get_data") != nil })

			if err := os.Remove(filepath.Join(dir, "echo.json")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ch, func() bool { return d.Details("echo") == nil })
			if d.Details("get_data") == nil {
				t.Error("get_data lost")
			}
		})
	}
}

// TestOpenDirErrors: a bad folder fails at open, naming the file.
func TestOpenDirErrors(t *testing.T) {
	for name, content := range map[string]string{
		"a.json": `{"name": "b"}`,
		"c.json": `{"unknown_field": 1}`,
		"d.json": `{"inputSchema": [1]}`,
		"e.json": `{} {}`,
	} {
		dir := t.TempDir()
		writeFile(t, dir, name, content)
		if _, err := disclose.OpenDir(dir, nil); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s %s: err %v", name, content, err)
		}
	}
	if _, err := disclose.OpenDir(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("missing folder opened")
	}
}

// TestServerWithDir: a server serves the folder's details, and a change to
// a file makes the next call need a fresh fetch.
func TestServerWithDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "echo.json", `{"usage_guidance": "v1"}`)
	d, ch := openDir(t, dir, 0)
	s, _ := newMCPServer(t, &disclose.Options{Source: d})
	url := serve(t, s)
	p := peer(t, url, "2026-07-28", "alice")
	m, _ := readMap(t, p, disclose.DefaultURI+"?tools=echo,get_data")
	if m["echo"].(map[string]any)["usage_guidance"] != "v1" {
		t.Errorf("echo %v", m["echo"])
	}
	// Details given in code win over the folder.
	if m["get_data"].(map[string]any)["examples"] == nil {
		t.Errorf("get_data %v", m["get_data"])
	}
	succeeded(t, call(t, p, "echo", map[string]any{"message": "1"}), "1")

	v1 := d.Version()
	writeFile(t, dir, "echo.json", `{"usage_guidance": "v2"}`)
	waitFor(t, ch, func() bool { return d.Version() != v1 })
	refusal(t, call(t, p, "echo", map[string]any{"message": "2"}))
	m, _ = readMap(t, p, disclose.DefaultURI+"?tools=echo")
	if m["echo"].(map[string]any)["usage_guidance"] != "v2" {
		t.Errorf("echo after reload %v", m["echo"])
	}
	succeeded(t, call(t, p, "echo", map[string]any{"message": "3"}), "3")
}
