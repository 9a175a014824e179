// Package redistest gives tests a real Redis server: the one named by
// PREFLIGHT_TEST_REDIS (host:port), or else a redis-server started for the
// test binary on a free loopback port and stopped by [Stop]. [Start] gives
// a test a server of its own that it may stop and restart. When no server
// can be had the test fails: Redis-backed tests never skip.
package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/internal/freeport"
	"go.uber.org/goleak"
)

// Bounds, not synchronisation: how long a server may take to become ready
// or to stop before the test fails.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
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
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	c, done, err := run(path, port, "--save", "", "--appendonly", "no")
	if err != nil {
		return err
	}
	addr, cmd, exited = net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), c, done
	return nil
}

// run starts redis-server on port with the extra arguments and waits
// until it says it is ready. The returned channel is closed when the
// process has exited.
func run(path string, port int, extra ...string) (*exec.Cmd, chan struct{}, error) {
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--protected-mode", "yes", "--loglevel", "notice"}, extra...)
	c := exec.Command(path, args...)
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		return nil, nil, err
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
			return nil, nil, err
		}
	case <-time.After(readyTimeout):
		_ = c.Process.Kill()
		<-done
		return nil, nil, fmt.Errorf("redis-server on port %d did not become ready within %v", port, readyTimeout)
	}
	return c, done, nil
}

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

// Stop stops the redis-server that [Addr] started, if any, and waits for
// it to exit. [Main] calls it after the tests.
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

// ServerOptions configure a server started by [Start]. A nil
// *ServerOptions means the zero value.
type ServerOptions struct {
	// Persist keeps the data across restarts: an append-only file,
	// fsynced at every write, in the server's own directory. The default
	// keeps nothing (--save '' --appendonly no), so a restart starts empty,
	// as a cache-only Redis does.
	Persist bool
}

// Server is a redis-server of one test's own, on one loopback port for its
// whole life, which the test may stop and restart.
type Server struct {
	path, dir string
	port      int
	args      []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a redis-server for t alone, stopped when t ends.
func Start(t testing.TB, opts *ServerOptions) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server is not on PATH (install it: apt-get install -y redis-server): %v", err)
	}
	s := &Server{path: path, dir: t.TempDir()}
	s.args = []string{"--dir", s.dir, "--save", "", "--appendonly", "no"}
	if opts != nil && opts.Persist {
		s.args = []string{"--dir", s.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	}
	for range 5 { // a free port may be taken between probing and binding
		if s.port, err = freeport.Get(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: starting redis-server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("redistest: %v", err)
		}
	})
	return s
}

// Addr returns the server's address, host:port; it stays the same across
// restarts.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop stops the server (SIGTERM: it closes its connections and, with
// [ServerOptions.Persist], has its data on disk) and waits for it to exit.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// Restart starts the stopped server again on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("redistest: restarting redis-server on port %d: %v", s.port, err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server on port %d is already running", s.port)
	}
	c, done, err := run(s.path, s.port, s.args...)
	if err != nil {
		return err
	}
	s.cmd, s.exited = c, done
	return nil
}

func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		err = fmt.Errorf("redis-server on port %d did not stop within %v; killed", s.port, stopTimeout)
	}
	s.cmd = nil
	return err
}
