package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
)

// TestPostCountsInFlight checks that a passed-through request counts
// against the upstream's calls in flight until it is done, as an exchange
// does: past MaxInflight a request fails at once.
func TestPostCountsInFlight(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer srv.Close()
	up := make(chan struct{}, 1)
	c, err := New(Spec{Name: "s", URL: srv.URL}, &Options{MaxInflight: 1, OnChange: func(c *Conn) {
		if c.Passthrough() {
			select {
			case up <- struct{}{}:
			default:
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { c.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	c.Want()
	<-up

	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	post := func() (*http.Response, context.CancelFunc, error) {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {c.Era()}}
		return c.Post(ctx, body, h)
	}
	resp, done, err := post()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(); err == nil || !strings.Contains(err.Error(), "calls in flight") {
		t.Errorf("a second request while the first is in flight: %v, want refused", err)
	}
	resp.Body.Close()
	done()
	resp, done, err = post()
	if err != nil {
		t.Fatalf("a request after the first is done: %v", err)
	}
	resp.Body.Close()
	done()
}
