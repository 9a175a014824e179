// Package pgtest gives tests a real PostgreSQL server: the one named by
// PREFLIGHT_TEST_POSTGRES (a connection URL), or else a server initialised
// and started for the test binary in a temporary directory on a free
// loopback port, stopped by [Main]. [Start] gives a test a server of its
// own that it may stop and restart. When no server can be had the test
// fails with what to install: Postgres-backed tests never skip.
//
// The server binaries are looked for in PREFLIGHT_POSTGRES_BIN, then in
// Debian's /usr/lib/postgresql/VERSION/bin (newest first), then on PATH.
// Run as root, the server runs as the postgres user (initdb refuses root).
package pgtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/preflightmcp/preflight/internal/freeport"
	"go.uber.org/goleak"
)

// EnvDSN names the environment variable holding the URL of a PostgreSQL
// server for tests, such as postgres://postgres@127.0.0.1:5432/postgres;
// its user must be allowed to create databases.
const EnvDSN = "PREFLIGHT_TEST_POSTGRES"

// EnvBin names the environment variable holding the directory of the
// PostgreSQL server binaries (initdb, postgres).
const EnvBin = "PREFLIGHT_POSTGRES_BIN"

// install says how to get the binaries.
const install = "install PostgreSQL (apt-get install -y postgresql), set " + EnvBin +
	" to the directory of initdb and postgres, or set " + EnvDSN + " to a server's URL"

// Bounds, not synchronisation: how long a server may take to initialise,
// start or stop before the test fails.
const (
	initTimeout  = 2 * time.Minute
	startTimeout = time.Minute
	stopTimeout  = time.Minute
)

var (
	mu      sync.Mutex
	shared  *Server
	envDSN  string
	lastErr error
)

// DSN returns the URL of the shared server's administrative database,
// starting the server if needed. Tests should rather use [NewDatabase].
func DSN(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if envDSN != "" {
		return envDSN
	}
	if shared != nil {
		return shared.DSN()
	}
	if d := os.Getenv(EnvDSN); d != "" {
		envDSN = d
		return d
	}
	if lastErr != nil {
		t.Fatalf("pgtest: %v", lastErr)
	}
	s, err := newServer()
	if err != nil {
		lastErr = err
		t.Fatalf("pgtest: %v", err)
	}
	shared = s
	return s.DSN()
}

// NewDatabase creates an empty database on the shared server for t alone,
// dropped when t ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := DSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "pftest_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", redact(admin), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: creating a database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("pgtest: dropping %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping %s: %v", name, err)
		}
	})
	return withDatabase(admin, name)
}

// NewDatabaseFrom is [NewDatabase] holding what the SQL file at path
// creates (a pg_dump without psql's commands, say): a database of an older
// schema to upgrade.
func NewDatabaseFrom(t testing.TB, path string) string {
	t.Helper()
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dsn := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", redact(dsn), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatalf("pgtest: running %s: %v", path, err)
	}
	return dsn
}

// withDatabase returns dsn naming database name instead.
func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// A keyword/value string: a later keyword wins.
		return dsn + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// redact hides the password of a URL for messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// Main runs a test binary's tests, stops the server they may have started,
// and fails the run if any goroutine outlived the tests. Call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			code = 1
		}
		shared.remove()
		shared = nil
	}
	mu.Unlock()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Server is a PostgreSQL server started by the tests, in a temporary
// directory, listening on one loopback port for its whole life.
type Server struct {
	bin, dir, data string
	port           int
	cred           *syscall.Credential

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *logTail
}

// Start initialises and starts a server for t alone, stopped and removed
// when t ends: for tests that stop and restart it.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := newServer()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
		s.remove()
	})
	return s
}

// DSN returns the URL of the server's administrative database.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop stops the server (a fast shutdown: connections are closed) and
// waits for it to exit.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Restart starts the stopped server again on the same port and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("pgtest: restarting: %v", err)
	}
}

// newServer initialises a cluster in a new temporary directory and starts
// it on a free loopback port.
func newServer() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the server must run as another user, and there is no postgres user (%v): %s", err, install)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, err
	}
	s.data = filepath.Join(s.dir, "data")
	if err := s.prepare(); err != nil {
		s.remove()
		return nil, err
	}
	for range 5 { // a free port may be taken between probing and binding
		if s.port, err = freeport.Get(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	s.remove()
	return nil, fmt.Errorf("starting postgres: %w", err)
}

// prepare makes the data directory (owned by the server's user) and runs
// initdb in it.
func (s *Server) prepare() error {
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(s.data, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		if err := os.Chown(s.data, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "initdb"), "-D", s.data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// start runs the server and waits until it accepts connections.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("the server is already running")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "max_connections=200",
		"-c", "log_min_messages=warning",
		"-c", "log_min_error_statement=panic",
		"-c", "logging_collector=off")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	log := &logTail{}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.add(sc.Text())
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited before accepting connections:\n%s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("postgres on port %d did not accept connections within %v: %v\n%s", s.port, startTimeout, err, log)
		}
	}
	s.cmd, s.exited, s.log = cmd, exited, log
	return nil
}

// stop stops the server if it runs: a fast shutdown, then a kill if it
// does not exit in time.
func (s *Server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		err = fmt.Errorf("postgres on port %d did not stop within %v; killed:\n%s", s.port, stopTimeout, s.log)
	}
	s.cmd = nil
	return err
}

// remove deletes the server's directory.
func (s *Server) remove() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// binDir finds the directory of initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if d := os.Getenv(EnvBin); d != "" {
		dirs = append(dirs, d)
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versions, func(a, b string) int { return versionOf(b) - versionOf(a) })
	dirs = append(dirs, versions...)
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is unset and no PostgreSQL server binaries were found: %s", EnvDSN, install)
}

func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// logTail keeps the last lines a server logged, for error messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 50 {
		l.lines = slices.Delete(l.lines, 0, 1)
	}
	l.lines = append(l.lines, line)
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
