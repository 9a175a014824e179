// Package pgtest gives tests a real PostgreSQL server: the one named by
// PREFLIGHT_TEST_POSTGRES (a postgres:// URL), or else one initialised in
// a temporary directory and started on a free loopback port for the test
// binary. As root it runs as the postgres user, since initdb refuses root.
// When neither is possible the test fails: Postgres-backed tests never
// skip.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of a PostgreSQL
// server for tests; its user may create databases.
const EnvURL = "PREFLIGHT_TEST_POSTGRES"

// Server is a PostgreSQL server for tests.
type Server struct {
	base *url.URL // the server, database "postgres"

	// For a server this package started.
	bin, dir string
	port     int
	ran      bool // started once: a restart keeps the port
	cred     *syscall.Credential
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *bytes.Buffer
}

var (
	shared    *Server
	sharedErr error
	sharedMu  sync.Mutex
	dbs       atomic.Int64
)

// Shared returns the test binary's server, starting it at the first call.
// Stop it from TestMain with [Main].
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = start()
	}
	if sharedErr != nil {
		t.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// Start starts a server of its own for t (for tests that stop and restart
// it), stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if os.Getenv(EnvURL) != "" {
		t.Fatalf("pgtest: a server of its own cannot be started with %s set", EnvURL)
	}
	s, err := start()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Main runs the tests and stops the shared server. Call it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.Close()
	}
	sharedMu.Unlock()
	return code
}

// NewDatabase creates an empty database for t and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base.String())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: creating a database: %v", err)
	}
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

func start() (*Server, error) {
	if env := os.Getenv(EnvURL); env != "" {
		u, err := url.Parse(env)
		if err != nil {
			return nil, fmt.Errorf("%s: not a URL", EnvURL)
		}
		return &Server{base: u}, nil
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "preflight-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	initdb := s.command(ctx, "initdb", "-D", s.data(), "-U", "preflight", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for range 5 { // a free port may be taken between probing and binding
		if err = s.Start(); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// binDir finds PostgreSQL's programs: Debian's newest version first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is unset and PostgreSQL is not installed (apt-get install -y postgresql)", EnvURL)
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	c.Dir = s.dir
	c.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return c
}

// URL returns the URL of the server's "postgres" database.
func (s *Server) URL() string { return s.base.String() }

// Start starts the server again after [Server.Stop], on the same port
// and data (at the first start, on a free port).
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bin == "" {
		return errors.New("not a server this package started")
	}
	if s.cmd != nil {
		return errors.New("already running")
	}
	if s.port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		s.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	c := s.command(context.Background(), "postgres", "-D", s.data(), "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	s.log = &bytes.Buffer{}
	c.Stdout, c.Stderr = s.log, s.log
	if err := c.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = c.Wait(); close(exited) }()
	s.base = &url.URL{Scheme: "postgres", User: url.User("preflight"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/postgres", RawQuery: "sslmode=disable"}
	deadline := time.Now().Add(30 * time.Second) // a bound, not a synchronisation
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.base.String())
		if err == nil {
			conn.Close(ctx)
			cancel()
			s.cmd, s.exited, s.ran = c, exited, true
			return nil
		}
		cancel()
		select {
		case <-exited:
			if !s.ran {
				s.port = 0 // maybe the port was taken: try another
			}
			return fmt.Errorf("postgres exited before it was ready:\n%s", s.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			<-exited
			return fmt.Errorf("postgres on port %d was not ready in 30s: %v\n%s", s.port, err, s.log)
		}
	}
}

// Stop stops the server (a fast shutdown: clients are disconnected) and
// waits for it to exit; the data stays for [Server.Start].
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	if s.bin == "" {
		return
	}
	s.Stop()
	os.RemoveAll(s.dir)
}
