package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// subscribable is a legacy upstream with a resource and a template of
// resources clients may subscribe to; it counts the subscriptions it is
// asked for and ended.
func subscribable(subs, unsubs *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { subs.Add(1); return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { unsubs.Add(1); return nil },
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a note"}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "mem://note", Name: "note", MIMEType: "text/plain"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://notes/{id}", Name: "notes"}, read)
	return s
}

// A session's unsubscribe ends its own subscription only: one that never
// subscribed cannot end another's.
func TestUnsubscribeEndsOnlyYourOwn(t *testing.T) {
	t.Parallel()
	var subs, unsubs atomic.Int64
	s := subscribable(&subs, &unsubs)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "subs", URL: serveHTTP(t, h), Era: legacy}}})
	ctx := context.Background()

	var updates atomic.Int64
	a := connect(t, url, legacy, nil, &mcp.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
		updates.Add(1)
	}})
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	b := connect(t, url, legacy, nil, nil)
	if err := b.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return updates.Load() == 1 })
	if n := unsubs.Load(); n != 0 {
		t.Fatalf("a session that never subscribed ended the upstream subscription (%d unsubscribes)", n)
	}
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return unsubs.Load() == 1 })
	if n := subs.Load(); n != 1 {
		t.Errorf("upstream subscribes = %d, want 1", n)
	}
}

// A session's subscriptions end with it, and one session cannot fill the
// gateway's table of subscriptions for everyone.
func TestSubscriptionsEndWithTheSession(t *testing.T) {
	t.Parallel()
	var subs, unsubs atomic.Int64
	s := subscribable(&subs, &unsubs)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "subs", URL: serveHTTP(t, h), Era: legacy}}})
	ctx := context.Background()

	a := connect(t, url, legacy, nil, nil)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	waitUntil(t, func() bool { return unsubs.Load() == 1 })

	greedy := connect(t, url, legacy, nil, nil)
	n := 0
	var refused error
	for ; n < 1000; n++ {
		if refused = greedy.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://notes/" + strconv.Itoa(n)}); refused != nil {
			break
		}
	}
	if refused == nil || !strings.Contains(refused.Error(), "too many resources subscribed to by this session") {
		t.Fatalf("after %d subscriptions: %v, want a refusal of the session's", n, refused)
	}
	others := connect(t, url, legacy, nil, nil)
	if err := others.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://notes/theirs"}); err != nil {
		t.Fatalf("another session's subscribe while one is at its limit: %v", err)
	}
	greedy.Close()
	waitUntil(t, func() bool { return unsubs.Load() == int64(1+n) })
}

// floodServer has a tool that sends many large progress notifications and
// one that sends a single one.
func floodServer(flooded chan<- struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	big := strings.Repeat("x", 64<<10)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&mcp.Tool{Name: "flood", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range 300 {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: big})
			}
			close(flooded)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "tick", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "tick"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ticked"}}}, nil
		})
	return s
}

func inMemory(s *mcp.Server) func(context.Context) (mcp.Transport, error) {
	return func(ctx context.Context) (mcp.Transport, error) {
		client, server := mcp.NewInMemoryTransports()
		_, err := s.Connect(ctx, server, nil)
		return client, err
	}
}

// A client that stops reading its response holds up nobody: the upstream
// still delivers its notifications, other clients still get their
// progress, and a tool the upstream adds is still listed.
func TestClientThatStopsReadingStallsNobody(t *testing.T) {
	flooded := make(chan struct{})
	s := floodServer(flooded)
	g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "slow", Connect: inMemory(s)}}})

	p := wiretest.Legacy(url, nil)
	p.Initialize(t)

	// A connection with a small receive buffer that never reads.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	host := strings.TrimPrefix(strings.TrimSuffix(url, gateway.MCPPath), "http://")
	conn, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"p1"}}}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s",
		gateway.MCPPath, host, p.Session(), legacy, len(body), body)
	select {
	case <-flooded:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream's notifications wait on a client that does not read them")
	}

	var progress atomic.Int64
	v := connect(t, url, legacy, nil, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) }})
	params := &mcp.CallToolParams{Name: "tick", Arguments: map[string]any{}}
	params.SetProgressToken("v1")
	if _, err := v.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return progress.Load() == 1 })

	s.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	waitUntil(t, func() bool { _, ok := g.View().Tool("added"); return ok })
}

// A deleted legacy session takes no further calls, not even from the
// entry's memory of sessions it checked.
func TestDeletedSessionTakesNoCalls(t *testing.T) {
	t.Parallel()
	s := floodServer(make(chan struct{}))
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "slow", Connect: inMemory(s)}}})
	p := wiretest.Legacy(url, nil)
	p.Initialize(t)
	if r := p.Call(t, "tools/call", map[string]any{"name": "tick", "arguments": map[string]any{}}); r.Error != nil {
		t.Fatalf("tick: %s", r.Raw)
	}
	session := p.Session()
	p.Close() // DELETE

	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tick","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacy)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "ticked") {
		t.Errorf("tools/call on a deleted session: HTTP %d %s, want 404", resp.StatusCode, b)
	}
}

// A session that subscribes while the gateway is still ending the last
// subscription to the same resource upstream is subscribed after that
// ends, never before: the upstream is left subscribed, in that order.
func TestSubscribeWhileTheLastUnsubscribes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []string
	entered, release := make(chan struct{}, 1), make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			mu.Lock()
			events = append(events, "subscribe")
			mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			entered <- struct{}{}
			<-release
			mu.Lock()
			events = append(events, "unsubscribe")
			mu.Unlock()
			return nil
		},
	})
	s.AddResource(&mcp.Resource{URI: "mem://note", Name: "note"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a note"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "subs", URL: serveHTTP(t, h), Era: legacy}}})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the gateway stops, on a failure too
	ctx := context.Background()
	a, b := connect(t, url, legacy, nil, nil), connect(t, url, legacy, nil, nil)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
		t.Fatal(err)
	}
	unsubscribed := make(chan error, 1)
	go func() { unsubscribed <- a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}) }()
	<-entered // A's unsubscribe is with the upstream
	subscribed := make(chan error, 1)
	go func() { subscribed <- b.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}) }()
	select {
	case err := <-subscribed:
		t.Fatalf("B's subscribe returned (%v) while A's unsubscribe was still with the upstream", err)
	case <-time.After(200 * time.Millisecond): // B waits, as it should
	}
	free()
	if err := <-unsubscribed; err != nil {
		t.Fatal(err)
	}
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(events, ","); got != "subscribe,unsubscribe,subscribe" {
		t.Errorf("the upstream saw %s, want subscribe,unsubscribe,subscribe", got)
	}
}

// A flood of notifications for a client that does not read them holds a
// bounded amount of the gateway's memory and no goroutine once the call
// ends, in both eras: the queue to the client drops what it cannot hold.
func TestNotificationFloodIsBounded(t *testing.T) {
	for _, tc := range []struct{ era, kind string }{{modern, "progress"}, {legacy, "progress"}, {modern, "log"}, {legacy, "log"}} {
		era := tc.era
		t.Run(era+"/"+tc.kind, func(t *testing.T) {
			const n, size = 8000, 4 << 10 // 32 MB, beyond any bounded queue (64 of them)
			done := make(chan struct{})
			s := mcp.NewServer(&mcp.Implementation{Name: "flood", Version: "1"}, nil)
			big := strings.Repeat("x", size)
			s.AddTool(&mcp.Tool{Name: "flood", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					defer close(done)
					for i := range n {
						var err error
						if tc.kind == "log" {
							//lint:ignore SA1019 a 2025-11-25 upstream still sends log messages during SEP-2577's deprecation window.
							err = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: big})
						} else {
							err = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: big})
						}
						if err != nil {
							return nil, err
						}
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil
				})
			_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "flood", Connect: inMemory(s)}}})

			heap := func() uint64 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return m.HeapAlloc
			}
			// A client with a small receive buffer that never reads.
			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
			}}
			host := strings.TrimPrefix(strings.TrimSuffix(url, gateway.MCPPath), "http://")
			conn, err := d.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			headers := "Mcp-Protocol-Version: " + era + "\r\nMcp-Method: tools/call\r\nMcp-Name: flood\r\n"
			meta := `"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"`
			if era == legacy {
				p := wiretest.Legacy(url, nil)
				p.Initialize(t)
				if r := p.Call(t, "logging/setLevel", map[string]any{"level": "debug"}); r.Error != nil {
					t.Fatal(r.Raw)
				}
				headers = "Mcp-Session-Id: " + p.Session() + "\r\nMcp-Protocol-Version: " + legacy + "\r\n"
				meta = `"progressToken":"p1"`
			}
			before, goroutines := heap(), runtime.NumGoroutine()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{` + meta + `}}}`
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
				gateway.MCPPath, host, headers, len(body), body)
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the upstream's notifications wait on a client that does not read them")
			}
			grown := int64(heap()) - int64(before)
			t.Logf("%s: %d %s notifications of %d bytes sent to a client that does not read: heap %+d MB", era, n, tc.kind, size, grown>>20)
			if grown > 8<<20 { // a quarter of the flood: a queue that held it all fails
				t.Errorf("the flood holds %d MB of the gateway's heap; want at most 8", grown>>20)
			}
			conn.Close()
			waitUntil(t, func() bool { return runtime.NumGoroutine() <= goroutines+4 })
			// The operator can see what was dropped: the call ended once
			// the client was gone, and its drops are counted.
			waitUntil(t, func() bool {
				f := scrape(t, url)["preflight_notifications_dropped_total"]
				return f != nil && len(f.GetMetric()) == 1 && matches(f.GetMetric()[0], map[string]string{"server": "flood"}) &&
					f.GetMetric()[0].GetCounter().GetValue() > 0
			})
		})
	}
}
