package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway"
)

// readyTimeout bounds how long a test waits for its upstreams.
const readyTimeout = 60 * time.Second

// serveHTTP serves s over streamable HTTP (both eras) on loopback until the
// test ends and returns its URL.
func serveHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- endpoint.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("upstream server: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + endpoint.Path
}

// filesDir makes a directory with a file for manage_files.
func filesDir(t testing.TB) *os.Root {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello from the files upstream\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "full", "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "inner", "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// filesServer is the manage_files example over HTTP.
func filesServer(t testing.TB) string { return filesOn(t, filesDir(t), nil) }

// filesOn serves the manage_files example over streamable HTTP on root
// (2026-07-28 and 2025-11-25 on one URL), calling seen, when not nil, with
// each request and its body before the server gets them.
func filesOn(t testing.TB, root *os.Root, seen func(r *http.Request, body []byte)) string {
	s := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	h := endpoint.NewHandler(s, nil)
	if seen == nil {
		return serveHTTP(t, h)
	}
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		seen(r, body)
		h.ServeHTTP(w, r)
	}))
}

// testLogger logs to the test when -v, else nowhere.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startGateway builds, starts and serves a gateway until the test ends and
// returns it with its MCP URL.
func startGateway(t testing.TB, opts *gateway.Options) (*gateway.Gateway, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("gateway Serve: %v", err)
		}
		g.Close()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), readyTimeout)
	defer wcancel()
	if err := g.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	return g, "http://" + ln.Addr().String() + gateway.MCPPath
}
