//go:build integration

package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/internal/freeport"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// standInEnv, set in the environment of this test binary, makes it stand
// in for preflight serve (see standIn) instead of running the tests.
const standInEnv = "PREFLIGHT_LOCAL_STAND_IN"

// runTimeout bounds the run script's start (initdb included) and its stop.
const runTimeout = 3 * time.Minute

// standIn is what the run script starts as preflight serve in its test:
// `serve -http ADDR -config FILE`. It loads the config with the gateway's
// own loader and reaches the Redis it names and the PostgreSQL of
// PREFLIGHT_POSTGRES_URL, failing as the gateway would if the script had
// not set them up; then it serves a replica (/mcp and /healthz) until
// SIGTERM or SIGINT.
func standIn(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "stand-in: "+format+"\n", a...)
		return 1
	}
	if len(args) == 0 || args[0] != "serve" {
		return fail("want serve, have %q", args)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("http", "", "")
	file := fs.String("config", "", "")
	if err := fs.Parse(args[1:]); err != nil || *addr == "" || *file == "" {
		return fail("want serve -http ADDR -config FILE, have %q", args)
	}
	cfg, err := config.Load(*file)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pingRedis(ctx, cfg.Redis.URL); err != nil {
		return fail("redis: %v", err)
	}
	conn, err := pgx.Connect(ctx, os.Getenv("PREFLIGHT_POSTGRES_URL"))
	if err != nil {
		return fail("postgres: %v", err)
	}
	err = conn.Ping(ctx)
	conn.Close(ctx)
	if err != nil {
		return fail("postgres: %v", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail("%v", err)
	}
	srv := &http.Server{Handler: newReplicaHandler("replica "+ln.Addr().String(), func() bool { return true }, nil)}
	stop, unnotify := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer unnotify()
	go func() {
		<-stop.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fail("%v", err)
	}
	return 0
}

// pingRedis sends PING to the Redis at a redis:// URL.
func pingRedis(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" {
		return fmt.Errorf("want a redis:// URL, have %q", rawURL)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// TestRunScript runs deploy/local/run with this test binary standing in
// for preflight serve: the script starts Redis, PostgreSQL, two replicas
// and HAProxy and prints the URL; calls through it reach both replicas and
// a legacy session stays on one; Ctrl-C (SIGINT to the process group, as a
// terminal sends it) stops everything and removes the temporary directory.
func TestRunScript(t *testing.T) {
	haproxyBin(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lbPort := freeport.Arg(t)
	cmd := exec.Command("bash", "run", "-replicas", "2", "-port", lbPort, "-config", "testdata/gateway.yaml")
	cmd.Env = append(os.Environ(), "PREFLIGHT_BIN="+exe, standInEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		http.DefaultClient.CloseIdleConnections()
	})

	// What it prints once everything runs.
	printed := map[string]string{}
	timeout := time.After(runTimeout)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended before it was ready: %v\n%s", <-exited, stderr.String())
			}
			if line == "Ctrl-C stops everything." {
				break read
			}
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				printed[k] = strings.TrimSpace(v)
			}
		case <-timeout:
			t.Fatalf("the script was not ready after %v:\n%s", runTimeout, stderr.String())
		}
	}
	mcpURL := printed["MCP"]
	if want := "http://127.0.0.1:" + lbPort + "/mcp"; mcpURL != want {
		t.Fatalf("MCP URL %q, want %q (printed %v)", mcpURL, want, printed)
	}
	dir, _, _ := strings.Cut(printed["files"], " ")
	replicaURLs := strings.Fields(printed["replicas"])
	if dir == "" || len(replicaURLs) != 2 {
		t.Fatalf("printed %v: want the files directory and two replicas", printed)
	}

	// Calls through HAProxy.
	p := wiretest.Stateless(mcpURL, nil)
	seen := map[string]bool{}
	for range 4 {
		seen[whoami(t, p)] = true
	}
	if len(seen) != 2 {
		t.Errorf("4 calls reached %v, want both replicas", seen)
	}
	legacy := wiretest.Legacy(mcpURL, nil)
	legacy.Initialize(t)
	first := whoami(t, legacy)
	for range 3 {
		if got := whoami(t, legacy); got != first {
			t.Errorf("a legacy session moved from %s to %s", first, got)
		}
	}
	legacy.Close()
	http.DefaultClient.CloseIdleConnections()

	// Ctrl-C.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("after Ctrl-C the script exited with %v:\n%s", err, stderr.String())
		}
	case <-time.After(runTimeout):
		t.Fatalf("the script did not stop within %v of Ctrl-C:\n%s", runTimeout, stderr.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after Ctrl-C (%v)", dir, err)
	}
	addrs := []string{"127.0.0.1:" + lbPort}
	for _, u := range append(replicaURLs, printed["redis"], printed["postgres"]) {
		if parsed, err := url.Parse(u); err == nil && parsed.Host != "" {
			addrs = append(addrs, parsed.Host)
		}
	}
	if len(addrs) != 5 {
		t.Errorf("addresses %v from %v: want HAProxy's, two replicas', Redis's and PostgreSQL's", addrs, printed)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Ctrl-C", a)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
