package gateway_test

//lint:file-ignore SA1019 the test sets a legacy session's log level and sends log messages, which protocol 2026-07-28 deprecates (SEP-2577) and 2025-11-25 clients still use.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// bodyRecorder records the tools/call requests an upstream receives.
type bodyRecorder struct {
	next http.Handler
	mu   sync.Mutex
	ids  []string // raw JSON ids of tools/call requests
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			b.mu.Lock()
			b.ids = append(b.ids, string(m.ID))
			b.mu.Unlock()
		}
	}
	b.next.ServeHTTP(w, r)
}

func (b *bodyRecorder) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 {
		return ""
	}
	return b.ids[len(b.ids)-1]
}

// legacyToolServer has a tool that logs at two levels, and one that waits
// until it is cancelled.
func legacyToolServer(cancelled chan<- struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "quiet detail"})
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "loud warning"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			cancelled <- struct{}{}
			return nil, ctx.Err()
		})
	return s
}

// TestLegacySessionPassthrough checks the path of a 2025-11-25 client's
// tools/call to a 2025-11-25 upstream over streamable HTTP: it reaches the
// upstream as it came, under an id of the gateway's (the upstream's session
// is shared), and the answer comes back under the client's id; log
// messages on the call's stream reach the client at or above its level
// only; a cancelled call is cancelled upstream; a request the SDK would
// refuse (an unknown session, repeated keys) is the SDK's.
func TestLegacySessionPassthrough(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{}, 1)
	s := legacyToolServer(cancelled)
	rec := &bodyRecorder{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "legacy", URL: serveHTTP(t, rec), Era: legacy}}})

	var (
		mu   sync.Mutex
		logs []string
	)
	cs := connect(t, url, legacy, nil, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		mu.Lock()
		logs = append(logs, string(r.Params.Level)+": "+r.Params.Data.(string))
		mu.Unlock()
	}})
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{}})
	if err != nil || res.IsError || contentText(t, res) != "said" {
		t.Fatalf("chatty: %v %v", res, err)
	}
	if id := rec.last(); !strings.HasPrefix(id, `"preflight-call-`) {
		t.Errorf("the upstream got the call under id %s, want the gateway's passthrough id", id)
	}
	// The client handles notifications on their own: wait for the
	// warnings of two calls, by then the debug messages before them on
	// the same streams would have come too.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	joined := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logs, "|")
	}
	waitUntil(t, func() bool { return strings.Count(joined(), "loud warning") == 2 })
	if got := joined(); got != "warning: loud warning|warning: loud warning" {
		t.Errorf("client log messages = %q, want only the warnings", got)
	}

	// Cancelling the call reaches the upstream's handler.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		errc <- err
	}()
	waitUntil(t, func() bool { return rec.count() == 3 })
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled call succeeded")
	}
	select {
	case <-cancelled:
	case <-time.After(readyTimeout):
		t.Fatal("the upstream's call was not cancelled")
	}

	// A session the gateway's SDK server does not hold: the SDK's 404.
	p := wiretest.Legacy(url, nil)
	p.Initialize(t)
	defer p.Close()
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chatty","arguments":{}}}`)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacy)
	req.Header.Set("Mcp-Session-Id", "no-such-session")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("call in an unknown session: HTTP %d, want 404", resp.StatusCode)
	}

	// Repeated names: two readings of one request, refused by the entry
	// with the member named; nothing reaches the upstream.
	n := rec.count()
	r := p.Post(t, []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"wait","name":"chatty","arguments":{}}}`))
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `repeated member "name"`) {
		t.Fatalf("repeated name: %+v", r.Error)
	}
	if rec.count() != n {
		t.Errorf("a request with a repeated name reached the upstream")
	}
}

func (b *bodyRecorder) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ids)
}

// waitUntil polls cond until it holds or readyTimeout passes.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
