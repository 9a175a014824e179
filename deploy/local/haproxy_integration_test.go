//go:build integration

package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/internal/freeport"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

const (
	// haproxyConfig is the config under test, used as shipped.
	haproxyConfig = "haproxy.cfg"
	// startTimeout bounds waiting for a process to listen, and for HAProxy
	// to see a replica change state (two checks, a second apart).
	startTimeout = 30 * time.Second
	// streamTimeout bounds reading an event stream; a proxy that buffered
	// the response would hold the first event past it.
	streamTimeout = time.Minute
)

// haproxyBin returns Debian's haproxy, which is in /usr/sbin (not on every
// user's PATH).
func haproxyBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if p := "/usr/sbin/haproxy"; isExec(p) {
		return p
	}
	t.Fatal("no haproxy: install Debian's package (apt-get install -y haproxy); scripts/test does")
	return ""
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lbEnv is the environment haproxy.cfg reads.
func lbEnv(lbPort string, replicas ...string) []string {
	env := append(os.Environ(), "PREFLIGHT_LB_PORT="+lbPort)
	for i, port := range replicas {
		env = append(env, fmt.Sprintf("PREFLIGHT_REPLICA_%d_PORT=%s", i+1, port))
	}
	return env
}

// TestHAProxyConfigCheck runs haproxy -c on the config: valid with its
// variables set, refused without one (an empty server address).
func TestHAProxyConfigCheck(t *testing.T) {
	bin := haproxyBin(t)
	cmd := exec.Command(bin, "-c", "-f", haproxyConfig)
	cmd.Env = lbEnv("7780", "7781", "7782")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "-c", "-f", haproxyConfig)
	cmd.Env = lbEnv("7780", "7781")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("haproxy -c accepted the config without PREFLIGHT_REPLICA_2_PORT:\n%s", out)
	}
}

// lb is HAProxy running haproxy.cfg, with a stats socket added for the test.
type lb struct {
	url    string // the MCP endpoint through HAProxy
	socket string
}

// startHAProxy runs haproxy.cfg in front of two replicas until the test ends.
func startHAProxy(t *testing.T, r1, r2 *replica) *lb {
	t.Helper()
	bin := haproxyBin(t)
	dir := t.TempDir()
	l := &lb{socket: filepath.Join(dir, "stats.sock")}
	extra := filepath.Join(dir, "stats.cfg")
	if err := os.WriteFile(extra, []byte("global\n    stats socket "+l.socket+" level admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 5 { // a free port may be taken between probing and binding
		port := freeport.Arg(t)
		cmd := exec.Command(bin, "-db", "-f", haproxyConfig, "-f", extra)
		cmd.Env = lbEnv(port, r1.port(), r2.port())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		if lastErr = waitListening(net.JoinHostPort("127.0.0.1", port), exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				http.DefaultClient.CloseIdleConnections()
			})
			l.url = "http://127.0.0.1:" + port + "/mcp"
			return l
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%v\n%s", lastErr, stderr.String())
	}
	t.Fatalf("haproxy did not start: %v", lastErr)
	return nil
}

// waitListening waits until addr accepts connections, the process exits or
// startTimeout passes.
func waitListening(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before listening")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %v", addr, startTimeout)
		}
	}
}

// status returns HAProxy's status of a server of the gateways backend
// (UP, DOWN, ...), from the stats socket.
func (l *lb) status(t *testing.T, server string) string {
	t.Helper()
	c, err := net.DialTimeout("unix", l.socket, time.Second)
	if err != nil {
		t.Fatalf("stats socket: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(bytes.TrimSpace(out), []byte("# ")))).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("show stat: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, row := range rows[1:] {
		if row[col["pxname"]] == "gateways" && row[col["svname"]] == server {
			return row[col["status"]]
		}
	}
	t.Fatalf("show stat has no server gateways/%s:\n%s", server, out)
	return ""
}

// waitStatus waits until HAProxy reports want for server (its checks run
// every second and need two results in a row).
func (l *lb) waitStatus(t *testing.T, server, want string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		got := l.status(t, server)
		if strings.HasPrefix(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s is %s after %v, want %s", server, got, startTimeout, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// whoami calls the whoami tool through p and returns the replica's name.
func whoami(t *testing.T, p *wiretest.Peer) string {
	t.Helper()
	r := p.Call(t, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if r.Error != nil {
		t.Fatalf("whoami: %+v", r.Error)
	}
	content, _ := r.Result["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("whoami: %s", r.Raw)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// TestHAProxy runs haproxy.cfg, as shipped, in front of two replicas and
// checks what the topology relies on: 2026-07-28 requests spread over the
// replicas; a 2025-11-25 session stays on the replica that created it; an
// event stream reaches the client as it is written; a replica whose
// /healthz fails is taken out, and its sessions are told they are gone.
func TestHAProxy(t *testing.T) {
	r1, r2 := startReplica(t, "r1"), startReplica(t, "r2")
	l := startHAProxy(t, r1, r2)
	l.waitStatus(t, "r1", "UP")
	l.waitStatus(t, "r2", "UP")

	t.Run("stateless requests go to every replica", func(t *testing.T) {
		p := wiretest.Stateless(l.url, nil)
		seen := map[string]int{}
		for range 6 {
			seen[whoami(t, p)]++
		}
		if seen["r1"] == 0 || seen["r2"] == 0 {
			t.Errorf("6 stateless calls reached %v, want both replicas", seen)
		}
	})

	t.Run("responses name the replica", func(t *testing.T) {
		seen := map[string]int{}
		for range 4 {
			resp, err := http.Get(strings.TrimSuffix(l.url, "/mcp") + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			seen[resp.Header.Get("X-Preflight-Replica")]++
		}
		if len(seen) != 2 || seen["r1"] == 0 || seen["r2"] == 0 {
			t.Errorf("X-Preflight-Replica of 4 requests: %v, want r1 and r2", seen)
		}
	})

	t.Run("a legacy session stays on its replica", func(t *testing.T) {
		seen := map[string]bool{}
		for range 2 { // round robin: two sessions start on two replicas
			p := wiretest.Legacy(l.url, nil)
			p.Initialize(t)
			first := whoami(t, p)
			seen[first] = true
			for i := range 6 {
				if got := whoami(t, p); got != first {
					t.Fatalf("call %d of session %s reached %s, the session is on %s", i+2, p.Session(), got, first)
				}
			}
			p.Close()
		}
		if len(seen) != 2 {
			t.Errorf("two sessions started on %v, want one on each replica", seen)
		}
	})

	t.Run("events stream through", func(t *testing.T) {
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(version, func(t *testing.T) { checkStreaming(t, l.url, version, r1, r2) })
		}
	})

	t.Run("a replica failing /healthz is taken out", func(t *testing.T) {
		// A session on r2, made before r2 fails.
		var legacy *wiretest.Peer
		for range 2 {
			p := wiretest.Legacy(l.url, nil)
			p.Initialize(t)
			if whoami(t, p) == "r2" {
				legacy = p
				break
			}
			p.Close()
		}
		if legacy == nil {
			t.Fatal("no session started on r2 in two tries")
		}

		r2.healthy.Store(false)
		l.waitStatus(t, "r2", "DOWN")
		p := wiretest.Stateless(l.url, nil)
		for range 4 {
			if got := whoami(t, p); got != "r1" {
				t.Fatalf("a call reached %s while it is down", got)
			}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call",
			"params": map[string]any{"name": "whoami", "arguments": map[string]any{}}})
		if status, _ := legacy.PostRaw(t, body); status != http.StatusNotFound {
			t.Errorf("a call of a session on the replica that is down: HTTP %d, want 404 (session not found, so the client starts anew)", status)
		}

		r2.healthy.Store(true)
		l.waitStatus(t, "r2", "UP")
		seen := map[string]int{}
		for range 4 {
			seen[whoami(t, p)]++
		}
		if seen["r2"] == 0 {
			t.Errorf("after r2 recovered, 4 calls reached %v", seen)
		}
		legacy.Close() // the session is still on r2, which ends it

	})
}

// checkStreaming calls hold through the load balancer with a progress
// token and checks that the progress notification arrives while the call
// is still held, then releases it and reads the result.
func checkStreaming(t *testing.T, url, version string, replicas ...*replica) {
	p := &wiretest.Peer{URL: url, Version: version}
	params := map[string]any{"name": "hold", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p1"}}
	headers := http.Header{}
	if version == "2025-11-25" {
		p.Initialize(t)
		defer p.Close()
		headers.Set("Mcp-Session-Id", p.Session())
		headers.Set("MCP-Protocol-Version", version)
	} else {
		params["_meta"] = map[string]any{
			"progressToken": "p1",
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "local-test", "version": "0"},
		}
		headers.Set("MCP-Protocol-Version", version)
		headers.Set("Mcp-Method", "tools/call")
		headers.Set("Mcp-Name", "hold")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})

	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v (a proxy that buffers the response holds it until the call ends)", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP %d, %s: %s", resp.StatusCode, ct, b)
	}
	sc := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var msg map[string]any
				if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &msg); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				return msg
			}
		}
		t.Fatalf("the stream ended without a message: %v (a proxy that buffers the response holds it until the call ends)", sc.Err())
		return nil
	}
	if msg := next(); msg["method"] != "notifications/progress" {
		t.Fatalf("first event %v, want the progress notification", msg)
	}
	// The call is still held: the event came through on its own.
	for _, r := range replicas {
		r.Release()
	}
	msg := next()
	result, _ := msg["result"].(map[string]any)
	if result == nil || result["isError"] == true {
		t.Fatalf("second event %v, want the call's result", msg)
	}
}
