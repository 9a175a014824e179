package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxSubscriptions bounds the resources subscribed to at once.
const maxSubscriptions = 4096

// subscriptions counts the clients subscribed to each resource, so that
// the gateway subscribes to an upstream once per resource and unsubscribes
// when the last client does.
type subscriptions struct {
	mu    sync.Mutex
	count map[string]int
}

func (s *subscriptions) init() { s.count = map[string]int{} }

func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	up, ok := g.View().ResourceUpstream(uri)
	if !ok {
		return mcp.ResourceNotFoundError(clip(uri))
	}
	conn, _ := g.Upstream(up)
	if caps := conn.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return invalidParams("the server of %q does not support subscriptions", clip(uri))
	}
	g.subs.mu.Lock()
	n := g.subs.count[uri]
	if n == 0 && len(g.subs.count) >= maxSubscriptions {
		g.subs.mu.Unlock()
		return fmt.Errorf("too many resources subscribed to (%d)", maxSubscriptions)
	}
	g.subs.count[uri] = n + 1
	g.subs.mu.Unlock()
	if n > 0 {
		return nil
	}
	if err := conn.Subscribe(ctx, uri); err != nil {
		g.subs.mu.Lock()
		if g.subs.count[uri]--; g.subs.count[uri] <= 0 {
			delete(g.subs.count, uri)
		}
		g.subs.mu.Unlock()
		return forwardError(conn, err)
	}
	return nil
}

func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	g.subs.mu.Lock()
	n, ok := g.subs.count[uri]
	if !ok {
		g.subs.mu.Unlock()
		return nil
	}
	if n > 1 {
		g.subs.count[uri] = n - 1
		g.subs.mu.Unlock()
		return nil
	}
	delete(g.subs.count, uri)
	g.subs.mu.Unlock()
	up, ok := g.View().ResourceUpstream(uri)
	if !ok {
		return nil
	}
	conn, _ := g.Upstream(up)
	if err := conn.Unsubscribe(ctx, uri); err != nil {
		g.logger.Info("upstream unsubscribe failed", "server", up, "uri", clip(uri), "error", err)
	}
	return nil
}

// resourceUpdated passes an upstream's resources/updated to the
// subscribed clients.
func (g *Gateway) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	_ = g.server.ResourceUpdated(ctx, p)
}
