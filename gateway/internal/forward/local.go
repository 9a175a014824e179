package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// local is the final handler of tools/resolve: the gateway answers it
// itself, with package resolve over the tools it mirrors into the SDK
// server (c.Local), from the resolution the resolve stage made.
type local struct{}

func (local) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if c.Local == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: c.Method + " cannot be answered on this path"}
	}
	res, err := c.Local(call.NewContext(ctx, c))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, internalError("encoding the result: %v", err)
	}
	return b, nil
}

// complete is the final handler of completion/complete: it forwards the
// request, as judged, to the upstream of its reference, under the
// upstream's name for it.
type complete struct{ f *Forward }

func (h *complete) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(c.Params, &p); err != nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: params must have a ref and an argument"}
	}
	ref := *p.Ref
	if ref.Type == "ref/prompt" {
		ref.Name = c.Target
	}
	p.Ref = &ref
	m, err := meta(c)
	if err != nil {
		return nil, err
	}
	p.Meta = m
	c.UpstreamEra = c.Upstream.Era()
	res, err := c.Upstream.Complete(ctx, &p)
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, internalError("encoding the result: %v", err)
	}
	return b, nil
}

// maxSubscriptions bounds the resources subscribed to at once.
const maxSubscriptions = 4096

// subscriptions counts the clients subscribed to each resource, so that
// the gateway subscribes to an upstream once per resource and unsubscribes
// when the last client does.
type subscriptions struct {
	mu    sync.Mutex
	count map[string]int // by upstream and URI
}

func (s *subscriptions) init() { s.count = map[string]int{} }

func subKey(c *call.Call) string { return c.Upstream.Name() + "\x00" + c.Target }

// subscribe is the final handler of resources/subscribe.
type subscribe struct{ f *Forward }

func (h *subscribe) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if caps := c.Upstream.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the server of %q does not support subscriptions", clip(c.Name))}
	}
	s := &h.f.subs
	key := subKey(c)
	s.mu.Lock()
	n := s.count[key]
	if n == 0 && len(s.count) >= maxSubscriptions {
		s.mu.Unlock()
		return nil, internalError("too many resources subscribed to (%d)", maxSubscriptions)
	}
	s.count[key] = n + 1
	s.mu.Unlock()
	if n > 0 {
		return json.RawMessage(`{}`), nil
	}
	c.UpstreamEra = c.Upstream.Era()
	if err := c.Upstream.Subscribe(ctx, c.Target); err != nil {
		s.mu.Lock()
		if s.count[key]--; s.count[key] <= 0 {
			delete(s.count, key)
		}
		s.mu.Unlock()
		return nil, upstreamError(c.Upstream, err)
	}
	return json.RawMessage(`{}`), nil
}

// unsubscribe is the final handler of resources/unsubscribe.
type unsubscribe struct{ f *Forward }

func (h *unsubscribe) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	s := &h.f.subs
	key := subKey(c)
	s.mu.Lock()
	n, ok := s.count[key]
	switch {
	case !ok:
		s.mu.Unlock()
		return json.RawMessage(`{}`), nil
	case n > 1:
		s.count[key] = n - 1
		s.mu.Unlock()
		return json.RawMessage(`{}`), nil
	}
	delete(s.count, key)
	s.mu.Unlock()
	c.UpstreamEra = c.Upstream.Era()
	// A 2026-07-28 client unsubscribes by ending its subscriptions/listen
	// stream, whose context the SDK then hands over already cancelled: the
	// upstream is told all the same (Unsubscribe bounds it by the call
	// timeout).
	if err := c.Upstream.Unsubscribe(context.WithoutCancel(ctx), c.Target); err != nil {
		h.f.logger.Info("upstream unsubscribe failed", "server", c.Upstream.Name(), "uri", clip(c.Name), "error", err)
	}
	return json.RawMessage(`{}`), nil
}

// reply is the final handler of an answer: it hands the judged answer to
// the upstream that asked.
type reply struct{}

func (reply) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if c.Reply == nil {
		return nil, internalError("an answer with nowhere to go")
	}
	if err := c.Reply(ctx, c.Arguments); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}
