package bridge

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// Raw is a result sent as it is, byte for byte. Keys the SDK adds to its
// _meta on the way out (the server's identity under 2026-07-28) are merged
// into the body's _meta, the body's own values winning.
type Raw struct {
	mcp.ResultBase
	body json.RawMessage
}

// NewRaw returns a result whose JSON is body, a JSON object.
func NewRaw(body json.RawMessage) *Raw { return &Raw{body: body} }

// Body returns the result's JSON without the SDK's additions.
func (r *Raw) Body() json.RawMessage { return r.body }

// MarshalJSON implements json.Marshaler.
func (r *Raw) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return r.body, nil
	}
	meta, ok, err := rawjson.Get(r.body, "_meta")
	if err != nil {
		return r.body, nil
	}
	if !ok {
		b, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		return rawjson.Set(r.body, "_meta", b)
	}
	for k, v := range r.Meta {
		if _, has, _ := rawjson.Get(meta, k); has {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if meta, err = rawjson.Set(meta, k, b); err != nil {
			return r.body, nil
		}
	}
	return rawjson.Set(r.body, "_meta", meta)
}

// relay delivers a call's progress and log notifications to the request
// the client is waiting on, which changes when a parked call is resumed by
// a later request. It holds that request's context: the SDK writes a
// notification on the stream of the request whose context it is given.
type relay struct {
	mu  sync.Mutex
	ctx context.Context
	ss  *mcp.ServerSession
}

func newRelay(ctx context.Context, ss *mcp.ServerSession) *relay {
	return &relay{ctx: ctx, ss: ss}
}

func (r *relay) set(ctx context.Context, ss *mcp.ServerSession) {
	r.mu.Lock()
	r.ctx, r.ss = ctx, ss
	r.mu.Unlock()
}

func (r *relay) target() (context.Context, *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx, r.ss
}

// Progress implements upstream.Peer.
func (r *relay) Progress(_ context.Context, p *mcp.ProgressNotificationParams) {
	if ctx, ss := r.target(); ss != nil && ctx.Err() == nil {
		_ = ss.NotifyProgress(ctx, p)
	}
}

// Log implements upstream.Peer.
func (r *relay) Log(_ context.Context, p *mcp.LoggingMessageParams) {
	if ctx, ss := r.target(); ss != nil && ctx.Err() == nil {
		_ = ss.Log(ctx, p)
	}
}
