package endpoint

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"go.uber.org/goleak"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// bareInitialize opens a legacy session with one initialize POST and
// walks away from it; it returns the HTTP status.
func bareInitialize(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestAbandonedSessionsExpire: sessions opened by a bare initialize and
// abandoned are closed after the default idle timeout, with everything
// they held. The bubble's clock makes the default's minutes instant.
func TestAbandonedSessionsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newTestServer()
		h := NewHandler(server, nil)
		const n = 50
		for i := range n {
			if w := bareInitialize(h); w.Code != http.StatusOK || w.Header().Get(sessionIDHeader) == "" {
				t.Fatalf("initialize %d: HTTP %d %s", i, w.Code, w.Body)
			}
		}
		synctest.Wait()
		if got := h.Sessions(); got != n {
			t.Fatalf("%d sessions counted, want %d", got, n)
		}
		time.Sleep(DefaultSessionTimeout - time.Second)
		synctest.Wait()
		if got := h.Sessions(); got != n {
			t.Fatalf("%d sessions open just before the timeout, want %d", got, n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := h.Sessions(); got != 0 {
			t.Errorf("%d sessions open after the idle timeout, want 0", got)
		}
		for ss := range server.Sessions() {
			t.Errorf("session %s still open in the server", ss.ID())
		}
	})
}

// TestSessionCap: past MaxSessions, a request that would open a legacy
// session gets 503 and -32000 (with its id) and opens nothing; open
// sessions and 2026-07-28 requests are served; a closed session frees its
// place.
func TestSessionCap(t *testing.T) {
	defer goleak.VerifyNone(t)
	server := newTestServer()
	h := NewHandler(server, &Options{MaxSessions: 3})
	hs := httptest.NewServer(h)
	defer hs.Close()

	peers := make([]*wiretest.Peer, 3)
	for i := range peers {
		peers[i] = wiretest.Legacy(hs.URL, nil)
		peers[i].Initialize(t)
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
	}()
	if got := h.Sessions(); got != 3 {
		t.Fatalf("%d sessions counted, want 3", got)
	}
	for _, body := range []string{initializeBody, strings.Replace(initializeBody, `"id":1`, `"id":"x-7"`, 1)} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r wiretest.Response
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		wantID := `1`
		if strings.Contains(body, "x-7") {
			wantID = `"x-7"`
		}
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get(sessionIDHeader) != "" || r.Error == nil || r.Error.Code != CodeTooManySessions || string(r.ID) != wantID ||
			!strings.Contains(r.Error.Message, "at most 3 legacy sessions") {
			t.Errorf("initialize past the cap: HTTP %d %v, %+v (id %s), want 503 with -32000 and id %s", resp.StatusCode, err, r.Error, r.ID, wantID)
		}
	}
	if n := len(slices.Collect(server.Sessions())); n != 3 {
		t.Errorf("the server holds %d sessions, want 3", n)
	}
	if r := peers[0].Call(t, "tools/list", nil); r.Error != nil {
		t.Errorf("open session past the cap: %s", r.Raw)
	}
	if r := wiretest.Stateless(hs.URL, nil).Call(t, "tools/list", nil); r.Error != nil {
		t.Errorf("2026-07-28 past the cap: %s", r.Raw)
	}

	peers[0].Close()
	waitFor(t, "a closed session to free its place", func() bool { return h.Sessions() == 2 })
	peers[0] = wiretest.Legacy(hs.URL, nil)
	peers[0].Initialize(t)
	if got := h.Sessions(); got != 3 {
		t.Errorf("%d sessions counted, want 3", got)
	}
}

// TestAbandonedSessionsOnTheWire: legacy clients that initialize over
// real HTTP and walk away leave nothing behind once the idle timeout has
// passed: no session, no goroutine.
func TestAbandonedSessionsOnTheWire(t *testing.T) {
	defer goleak.VerifyNone(t)
	server := newTestServer()
	h := NewHandler(server, &Options{SessionTimeout: 100 * time.Millisecond})
	hs := httptest.NewServer(h)
	defer hs.Close()
	for range 20 {
		wiretest.Legacy(hs.URL, nil).Initialize(t) // and never a DELETE
	}
	waitFor(t, "abandoned sessions to time out", func() bool { return h.Sessions() == 0 })
	for ss := range server.Sessions() {
		t.Errorf("session %s still open in the server", ss.ID())
	}
}

// waitFor polls cond until it holds, failing the test if it does not
// within a generous bound; it asserts an outcome, not a duration.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionTimeoutOptions: the idle timeout given to the SDK's stateful
// handler.
func TestSessionTimeoutOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		want time.Duration
	}{
		{"default", Options{}, DefaultSessionTimeout},
		{"set", Options{SessionTimeout: time.Minute}, time.Minute},
		{"never", Options{SessionTimeout: -1}, 0},
		{"from Legacy", Options{Legacy: &mcp.StreamableHTTPOptions{SessionTimeout: time.Hour}}, time.Hour},
		{"over Legacy", Options{SessionTimeout: time.Minute, Legacy: &mcp.StreamableHTTPOptions{SessionTimeout: time.Hour}}, time.Minute},
	} {
		if got := c.opts.handlerOptions(c.opts.Legacy, false).SessionTimeout; got != c.want {
			t.Errorf("%s: SessionTimeout %v, want %v", c.name, got, c.want)
		}
		if got := c.opts.handlerOptions(c.opts.Stateless, true).SessionTimeout; got != 0 {
			t.Errorf("%s: the stateless handler has SessionTimeout %v", c.name, got)
		}
	}
}

// TestDeleteCancelsRequests: a legacy client that deletes its session
// while one of its requests waits (here, a tool that waits for its
// context) ends that request: the SDK closes a session only once its
// requests are done, so without the cancellation the DELETE would wait as
// long as the request.
func TestDeleteCancelsRequests(t *testing.T) {
	defer goleak.VerifyNone(t)
	server := newTestServer()
	started := make(chan struct{})
	ended := make(chan error, 1)
	var release chan struct{}
	mcp.AddTool(server, &mcp.Tool{Name: "wait", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			close(started)
			select {
			case <-ctx.Done():
			case <-release: // the test failed: let the server shut down
			}
			ended <- ctx.Err()
			return nil, nil, ctx.Err()
		})
	hs := httptest.NewServer(NewHandler(server, nil))
	defer hs.Close()
	release = make(chan struct{})
	defer close(release)
	p := wiretest.Legacy(hs.URL, nil)
	p.Initialize(t)

	called := make(chan struct{})
	go func() {
		defer close(called)
		body := `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"wait","arguments":{}}}`
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set(sessionIDHeader, p.Session())
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	deleted := make(chan struct{})
	go func() { p.Close(); close(deleted) }()
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the request ended without a cancelled context")
		}
	case <-time.After(30 * time.Second): // only a request that outlives its session gets here
		t.Fatal("the request still runs after its session was deleted")
	}
	<-deleted
	<-called
	waitFor(t, "the session to close", func() bool { return serverSessions(server) == 0 })
}

// serverSessions counts the server's sessions.
func serverSessions(server *mcp.Server) int { return len(slices.Collect(server.Sessions())) }
