package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
)

// streamerEnv makes the test binary (see runChildServer) run a stdio
// server whose tool streams forever.
const streamerEnv = "PREFLIGHT_GATEWAY_TEST_STREAMER"

// closeBound is how long a test lets Close take before calling it hung:
// far beyond its deadline, so that only a hang fails.
const closeBound = 20 * time.Second

// streamForever sends progress for req until stop is closed, whatever
// the gateway says: cancellation, a closed connection.
func streamForever(req *mcp.CallToolRequest, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		_ = req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: "still going"})
	}
}

// streamer is a server whose tool "stream" never returns and sends
// progress until stop is closed; started is closed at its first call.
func streamer(started chan<- struct{}, stop <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "streamer", Version: "1"}, nil)
	var once sync.Once
	s.AddTool(&mcp.Tool{Name: "stream", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			once.Do(func() { close(started) })
			streamForever(req, stop)
			return &mcp.CallToolResult{}, nil
		})
	return s
}

// runStreamer serves streamer over stdio until the process is killed.
func runStreamer() int {
	started, stop := make(chan struct{}), make(chan struct{})
	s := streamer(started, stop)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// TestCloseWhileUpstreamStreams: Close returns, and leaves no goroutine
// behind (goleak in TestMain), while an upstream streams progress for a
// call in flight and never answers it; over stdio, HTTP and in memory,
// for clients of both eras. Serve gives the call its grace first.
func TestCloseWhileUpstreamStreams(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	upstreams := map[string]func(t *testing.T, started chan struct{}, stop chan struct{}) gateway.UpstreamSpec{
		"stdio": func(t *testing.T, started, _ chan struct{}) gateway.UpstreamSpec {
			close(started) // seen by the client's progress instead
			return gateway.UpstreamSpec{Name: "up", Command: exe, Args: []string{"-test.run=^$"},
				Env: map[string]string{childEnv: "1", streamerEnv: "1"}, Dir: t.TempDir()}
		},
		"http": func(t *testing.T, started, stop chan struct{}) gateway.UpstreamSpec {
			return gateway.UpstreamSpec{Name: "up", URL: serveEra(t, streamer(started, stop), legacy)}
		},
		"memory": func(t *testing.T, started, stop chan struct{}) gateway.UpstreamSpec {
			return gateway.UpstreamSpec{Name: "up", Connect: inMemory(streamer(started, stop))}
		},
	}
	for name, spec := range upstreams {
		for _, era := range []string{modern, legacy} {
			t.Run(name+"/"+era, func(t *testing.T) {
				started, stop := make(chan struct{}), make(chan struct{})
				up := spec(t, started, stop)
				// Cleanups run last first: the gateway closes, then the
				// tool stops streaming, then the upstream's server stops.
				t.Cleanup(func() { close(stop) })
				closeWhileStreaming(t, up, era, started)
			})
		}
	}
}

// closeWhileStreaming serves a gateway in front of up, calls "stream" as
// a client of era, and stops the gateway while the call streams.
func closeWhileStreaming(t *testing.T, up gateway.UpstreamSpec, era string, started <-chan struct{}) {
	g, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{up}, ShutdownGrace: 500 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	closed := false
	t.Cleanup(func() {
		if !closed {
			g.Close()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopServing := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	wctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}

	progressed := make(chan struct{})
	var once sync.Once
	cs := connect(t, "http://"+ln.Addr().String()+gateway.MCPPath, era, nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(func() { close(progressed) }) }})
	called := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{}}
		params.SetProgressToken("p")
		_, err := cs.CallTool(context.Background(), params)
		called <- err
	}()
	for _, ch := range []<-chan struct{}{started, progressed} {
		select {
		case <-ch:
		case <-time.After(readyTimeout):
			t.Fatal("the call did not start streaming")
		}
	}

	stopServing()
	<-served // within the grace; the call is cut
	done := make(chan error, 1)
	go func() { done <- g.Close() }()
	select {
	case <-done:
		closed = true
	case <-time.After(closeBound):
		t.Fatalf("Close still blocked %v after Serve returned, with an upstream streaming for a call in flight", closeBound)
	}
	<-called
}
