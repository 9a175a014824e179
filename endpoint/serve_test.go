package endpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
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

// startServe runs ServeWith on a loopback port; stop shuts it down and
// checks it returned nil.
func startServe(t *testing.T, h http.Handler, opts *ServeOptions) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeWith(ctx, ln, h, opts) }()
	return "http://" + ln.Addr().String(), func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeWith = %v, want nil", err)
		}
	}
}

// TestServeSlowBody: a client that sends its headers and then trickles
// its body, a byte at a time, is cut off once ReadTimeout has passed: the
// server answers and closes the connection instead of waiting for ever.
func TestServeSlowBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	server := newTestServer()
	base, stop := startServe(t, NewHandler(server, nil), &ServeOptions{ReadTimeout: 200 * time.Millisecond})
	defer stop()

	for _, hdr := range []string{"", "MCP-Protocol-Version: 2026-07-28\r\n", "MCP-Protocol-Version: 2025-11-25\r\n"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 100000\r\n\r\n{", Path, hdr)
		stopTrickle := make(chan struct{})
		trickled := make(chan struct{})
		go func() {
			defer close(trickled)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopTrickle:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		// A generous bound that only a server that never gives up
		// reaches; the assertion is that it gave up, not when.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%q: no answer to a trickled body: %v", hdr, err)
		} else {
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%q: HTTP %d, want a 4xx for a body that did not arrive", hdr, resp.StatusCode)
			}
			if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, io.EOF) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("%q: the connection stays open after the answer", hdr)
				}
			}
		}
		close(stopTrickle)
		conn.Close()
		<-trickled
	}
	for ss := range server.Sessions() {
		t.Errorf("a trickled body left session %s open", ss.ID())
	}
}

// TestServeLongExchanges: ReadTimeout bounds sending a request, not the
// exchange: a legacy session's standalone event stream and a POST whose
// event-stream answer takes many times the timeout both keep working
// (net/http lifts the read deadline once the body has been read).
func TestServeLongExchanges(t *testing.T) {
	defer goleak.VerifyNone(t)
	const readTimeout = 100 * time.Millisecond
	server := newTestServer()
	release := make(chan struct{})
	mcp.AddTool(server, &mcp.Tool{Name: "slow", Description: "Answers when released."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	base, stop := startServe(t, NewHandler(server, nil), &ServeOptions{ReadTimeout: readTimeout})
	defer stop()

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + Path,
		HTTPClient: &http.Client{Transport: transport},
		MaxRetries: -1, // a stream that breaks stays broken: no reconnection hides it
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// A call answered long after its body was read.
	go func() {
		time.Sleep(10 * readTimeout)
		close(release)
	}()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("slow call: %+v, %v", res, err)
	}

	// A notification on the standalone stream, opened long before.
	server.AddTool(&mcp.Tool{Name: "late", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	select {
	case <-changed:
	case <-time.After(30 * time.Second): // only a lost stream gets here
		t.Error("no tools/list_changed on the standalone stream")
	}
}

// TestServeIdleAndSlowHeaders: a kept-alive connection that carries no
// further request, and a client that never finishes its headers, are
// closed by the server.
func TestServeIdleAndSlowHeaders(t *testing.T) {
	defer goleak.VerifyNone(t)
	base, stop := startServe(t, NewHandler(newTestServer(), nil), &ServeOptions{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	defer stop()
	addr := strings.TrimPrefix(base, "http://")

	closedByServer := func(conn net.Conn) bool {
		// A generous bound that only a connection left open reaches.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.ReadAll(conn)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("the server closed the connection after one request; keep-alive was expected")
	}
	if !closedByServer(idle) {
		t.Error("an idle kept-alive connection stays open")
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", Path) // and no more
	if !closedByServer(slow) {
		t.Error("a connection with unfinished headers stays open")
	}
}
