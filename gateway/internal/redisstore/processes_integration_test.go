//go:build integration

package redisstore_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// buildFiles builds internal/filesd (manage_files, disclosing, with an
// optional Redis store) into a temporary directory.
func buildFiles(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH (go test puts its own first): %v", err)
	}
	out := filepath.Join(t.TempDir(), "files")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/preflightmcp/preflight/gateway/internal/redisstore/internal/filesd")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build filesd: %v\n%s", err, b)
	}
	return out
}

var servingURL = regexp.MustCompile(`msg=serving url=(\S+)`)

// startFiles runs filesd over HTTP with args and returns its
// URL once it says it is serving. The process is interrupted and waited
// for at cleanup.
func startFiles(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-root", t.TempDir()}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	drained := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := servingURL.FindStringSubmatch(line); m != nil {
				urls <- m[1]
			}
		}
		close(urls)
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("files %v: %v\n%s", args, err, log.String())
		}
	})
	url, ok := <-urls
	if !ok {
		<-drained
		t.Fatalf("files %v exited before serving:\n%s", args, log.String())
	}
	return url
}

// TestTwoProcessesShareRedis: two filesd processes with -redis, one Redis: a description fetched through one
// authorizes 2026-07-28 calls through the other; legacy sessions stay
// isolated (a session lives in one process).
func TestTwoProcessesShareRedis(t *testing.T) {
	t.Parallel()
	bin := buildFiles(t)
	args := []string{"-redis", redistest.Addr(t), "-redis-prefix", redistest.Prefix(t)}
	a := startFiles(t, bin, args...)
	b := startFiles(t, bin, args...)
	readArgs := map[string]any{"name": "manage_files", "arguments": map[string]any{"path": "n.txt", "action": "read"}}
	refused := func(url, era string) bool {
		t.Helper()
		p := &wiretest.Peer{URL: url, Version: era}
		defer p.Close()
		r := p.Call(t, "tools/call", readArgs)
		if r.Error != nil {
			t.Fatalf("call through %s: %+v", url, r.Error)
		}
		sc, _ := r.Result["structuredContent"].(map[string]any)
		e, _ := sc["error"].(map[string]any)
		return e["code"] == disclose.CodeToolDescriptionRequired
	}
	if !refused(b, "2026-07-28") {
		t.Fatal("b let a call through before any fetch")
	}
	r := wiretest.Stateless(a, nil).Call(t, "resources/read", map[string]any{"uri": disclose.DefaultURI + "?tools=manage_files"})
	if r.Error != nil {
		t.Fatalf("read through a: %+v", r.Error)
	}
	if refused(b, "2026-07-28") {
		t.Fatal("b refused a call after the fetch through a")
	}
	if !refused(b, "2025-11-25") {
		t.Fatal("a new legacy session on b was not refused")
	}
	// Without -redis each process keeps its own state.
	c := startFiles(t, bin)
	if !refused(c, "2026-07-28") {
		t.Fatal("a process with its own memory store saw the shared state")
	}
}
