// Package redistest gives tests a real Redis server: the one named by
// PREFLIGHT_TEST_REDIS (host:port), or else a redis-server started for the
// test binary on a free loopback port and stopped by [Stop]. When neither
// is possible the test fails: Redis-backed tests never skip.
package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"go.uber.org/goleak"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvAddr names the environment variable holding the address of a Redis
// server for tests (CI's .ci/run sets it).
const EnvAddr = "PREFLIGHT_TEST_REDIS"

var (
	mu      sync.Mutex
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{}
	lastErr error
)

// Addr returns the address (host:port) of a Redis server for t, starting
// one if needed. It fails t if there is none and none can be started.
func Addr(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if addr != "" {
		return addr
	}
	if a := os.Getenv(EnvAddr); a != "" {
		addr = a
		return addr
	}
	if lastErr != nil {
		t.Fatalf("redistest: %v", lastErr)
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		lastErr = fmt.Errorf("%s is unset and redis-server is not on PATH (install it: apt-get install -y redis-server): %v", EnvAddr, err)
		t.Fatalf("redistest: %v", lastErr)
	}
	for range 5 { // a free port may be taken between probing and binding
		if err = start(path); err == nil {
			return addr
		}
	}
	lastErr = err
	t.Fatalf("redistest: starting redis-server: %v", err)
	return ""
}

// start runs redis-server on a free loopback port and waits until it
// says it is ready.
func start(path string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "notice")
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		var log strings.Builder
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled {
				log.WriteString(line + "\n")
				if strings.Contains(line, "Ready to accept connections") {
					ready <- nil
					signalled = true
				}
			}
		}
		if !signalled {
			ready <- fmt.Errorf("redis-server exited before it was ready:\n%s", log.String())
		}
		_, _ = io.Copy(io.Discard, out)
		_ = c.Wait()
		close(done)
	}()
	select {
	case err := <-ready:
		if err != nil {
			<-done
			return err
		}
	case <-time.After(30 * time.Second): // a bound, not a synchronisation
		_ = c.Process.Kill()
		<-done
		return fmt.Errorf("redis-server on port %d did not become ready", port)
	}
	addr, cmd, exited = net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), c, done
	return nil
}

// Stop stops the redis-server that [Addr] started, if any, and waits for
// it to exit. Call it from TestMain after m.Run.
// Main runs a test binary's tests, stops the Redis server they may have
// started, and fails the run if any goroutine outlived the tests. Call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
		cmd, addr = nil, ""
	}
}

// Prefix returns a key prefix unique to one test, so tests can share one
// Redis server without seeing each other's keys.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", ":", " ", "_").Replace(t.Name())
	return "preflight-test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}
