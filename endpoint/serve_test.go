package endpoint

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestServe runs both eras through Serve on an ephemeral port and shuts it
// down by cancelling the context.
func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, NewHandler(newTestServer(), nil)) }()

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	base := "http://" + ln.Addr().String()

	if got := callEcho(t, client, base+Path, nil, true); got != "2026-07-28" {
		t.Errorf("default client negotiated %q, want 2026-07-28", got)
	}
	if got := callEcho(t, client, base+Path, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, true); got != "2025-11-25" {
		t.Errorf("legacy client negotiated %q, want 2025-11-25", got)
	}
	for _, path := range []string{"/", "/mcp/", "/other"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
		}
	}

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// TestServeEndsLegacyStreams shuts Serve down while a legacy client holds its
// standalone event stream open. Shutdown would wait for that stream until
// the grace period ran out, and report it; Serve must end it and return nil.
func TestServeEndsLegacyStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := newTestServer()
	// Closed when the client's standalone GET stream reaches the handler.
	streamOpen := make(chan struct{})
	var once sync.Once
	h := NewHandler(server, nil)
	watch := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			once.Do(func() { close(streamOpen) })
		}
		h.ServeHTTP(w, req)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, watch) }()

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + ln.Addr().String() + Path,
		HTTPClient: &http.Client{Transport: transport},
		MaxRetries: -1, // the server goes away: do not try to reconnect the stream
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	<-streamOpen

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	// The server is gone, so the client's closing DELETE fails; the error
	// says nothing about Serve.
	_ = cs.Close()
	// And the server side of the session was never deleted: close it here,
	// as a process that outlives Serve would have to.
	for ss := range server.Sessions() {
		ss.Close()
	}
}

// TestServeListenerError checks that Serve reports a listener that fails.
func TestServeListenerError(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = Serve(context.Background(), ln, http.NotFoundHandler())
	if err == nil || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed listener = %v, want net.ErrClosed", err)
	}
}

// TestServeTransport runs the body of ServeStdio over an in-memory transport
// (stdio itself belongs to the test binary) in both eras.
func TestServeTransport(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ct := mcp.NewInMemoryTransports()
			served := make(chan error, 1)
			go func() { served <- serveTransport(ctx, newTestServer(), st) }()

			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil)
			cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %q, want %q", got, version)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "stdio"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serveTransport after cancel = %v, want nil", err)
			}
			cs.Close()
		})
	}
}
