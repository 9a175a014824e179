//go:build integration

package local

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
)

// replica is an MCP endpoint of both eras standing where a preflight serve
// replica stands behind the load balancer: /mcp and /healthz. Its tools say
// which replica answered (whoami), and hold a call open after a progress
// notification until released (hold), to see that events stream through.
type replica struct {
	name    string
	addr    string
	healthy atomic.Bool
	srv     *http.Server
	done    chan struct{}

	mu      sync.Mutex
	release chan struct{}
}

// newReplicaHandler returns the /mcp and /healthz handler of a replica named
// name. release, when not nil, is what hold waits for.
func newReplicaHandler(name string, healthy func() bool, release func() <-chan struct{}) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Names the replica that answers."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "hold", Description: "Reports progress, then waits to be released."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "held"})
			}
			var ch <-chan struct{}
			if release != nil {
				ch = release()
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released by " + name}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint.NewHandler(server, nil))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !healthy() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "stopping"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "replica": name})
	})
	return mux
}

// startReplica serves a replica on a loopback port until the test ends.
func startReplica(t *testing.T, name string) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, addr: ln.Addr().String(), done: make(chan struct{}), release: make(chan struct{})}
	r.healthy.Store(true)
	r.srv = &http.Server{Handler: newReplicaHandler(name, r.healthy.Load, r.releaseChan)}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		r.Release()
		_ = r.srv.Close()
		<-r.done
	})
	return r
}

func (r *replica) releaseChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.release
}

// Release lets the calls held so far end.
func (r *replica) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.release)
	r.release = make(chan struct{})
}

func (r *replica) port() string {
	_, port, _ := net.SplitHostPort(r.addr)
	return port
}
