package forward

//lint:file-ignore SA1019 the gateway passes logging through faithfully; protocol 2026-07-28 deprecates it (SEP-2577) but clients and servers still use it during the deprecation window.

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// Bounds of a relay.
const (
	// relayQueue bounds the notifications a relay holds for a client that
	// reads them slower than the upstream sends them; past it, they are
	// dropped (progress and log messages are advisory).
	relayQueue = 64
	// relayFlush bounds how long a call's result waits for the
	// notifications sent before it to reach the client.
	relayFlush = 5 * time.Second
)

// relay delivers a call's progress and log notifications to the client's
// request that waits on the call, which changes when a parked call is
// resumed by a later request. It never blocks its caller, which is the
// upstream connection's notification handler, shared by every call on
// that connection: notifications queue, boundedly, for one goroutine per
// relay that writes them, in order, while there are any.
type relay struct {
	mu      sync.Mutex
	conn    call.Conn
	queue   []note
	idle    chan struct{} // non-nil while the writer runs; closed when it stops
	dropped int           // notifications dropped with the queue full
}

type note struct {
	ctx    context.Context
	method string
	params json.RawMessage
}

func newRelay(conn call.Conn) *relay { return &relay{conn: conn} }

func (r *relay) set(conn call.Conn) {
	r.mu.Lock()
	r.conn = conn
	r.mu.Unlock()
}

// Progress implements upstream.Peer.
func (r *relay) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	if b, err := json.Marshal(p); err == nil {
		r.push(note{ctx, "notifications/progress", b})
	}
}

// Log implements upstream.Peer.
func (r *relay) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	if b, err := json.Marshal(p); err == nil {
		r.push(note{ctx, "notifications/message", b})
	}
}

// push queues n for the client, starting the writer if it is not running.
func (r *relay) push(n note) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) >= relayQueue {
		r.dropped++
		return
	}
	r.queue = append(r.queue, n)
	if r.idle == nil {
		r.idle = make(chan struct{})
		go r.write(r.idle)
	}
}

// write delivers the queued notifications and stops when none are left.
func (r *relay) write(idle chan struct{}) {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.idle = nil
			r.mu.Unlock()
			close(idle)
			return
		}
		n, conn := r.queue[0], r.conn
		r.queue[0] = note{}
		r.queue = r.queue[1:]
		r.mu.Unlock()
		conn.Notify(n.ctx, n.method, n.params)
	}
}

// droppedCount returns how many notifications were dropped so far.
func (r *relay) droppedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// flush waits, within relayFlush, for the notifications queued so far to
// be written, so that they reach the client before the call's result.
func (r *relay) flush(ctx context.Context) {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(relayFlush)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}
