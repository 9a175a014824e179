package forward

//lint:file-ignore SA1019 the gateway passes logging through faithfully; protocol 2026-07-28 deprecates it (SEP-2577) but clients and servers still use it during the deprecation window.

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// relay delivers a call's progress and log notifications to the client's
// request that waits on the call, which changes when a parked call is
// resumed by a later request.
type relay struct {
	mu   sync.Mutex
	conn call.Conn
}

func newRelay(conn call.Conn) *relay { return &relay{conn: conn} }

func (r *relay) set(conn call.Conn) {
	r.mu.Lock()
	r.conn = conn
	r.mu.Unlock()
}

func (r *relay) target() call.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn
}

// Progress implements upstream.Peer.
func (r *relay) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if b, err := json.Marshal(p); err == nil {
		r.target().Notify(ctx, "notifications/progress", b)
	}
}

// Log implements upstream.Peer.
func (r *relay) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	if b, err := json.Marshal(p); err == nil {
		r.target().Notify(ctx, "notifications/message", b)
	}
}
