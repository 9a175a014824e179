package forward

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Bounds of the subscriptions the gateway holds for its clients.
const (
	// maxSubscriptions bounds the resources subscribed to upstream at
	// once, over all clients.
	maxSubscriptions = 4096
	// maxPrincipalSubscriptions bounds one principal's, over its
	// sessions, so that no principal fills the table for the others.
	maxPrincipalSubscriptions = 1024
	// maxSessionSubscriptions bounds one session's.
	maxSessionSubscriptions = 256
)

// subscriptions holds which client sessions subscribed to each upstream
// resource, so that the gateway subscribes to it upstream once and
// unsubscribes when the last session unsubscribes or ends. A session's
// unsubscribe touches only its own subscriptions.
type subscriptions struct {
	mu          sync.Mutex
	byResource  map[resourceKey]*subscribed
	bySession   map[call.Session]*sessionSubs
	byPrincipal map[string]int
	logger      *slog.Logger
}

type resourceKey struct{ upstream, uri string }

// subscribed is one upstream subscription and the sessions it serves.
type subscribed struct {
	up       *upstream.Conn
	uri      string
	sessions map[call.Session]struct{}
	ready    chan struct{} // closed when the upstream has answered
	err      error         // its refusal, once ready
	// closing is set when its last session left, and closed once the
	// upstream has been told: a session subscribing meanwhile waits, then
	// subscribes anew, so that an unsubscribe never lands after it.
	closing chan struct{}
}

type sessionSubs struct {
	principal string
	keys      map[resourceKey]struct{}
}

func (s *subscriptions) init(logger *slog.Logger) {
	s.logger = logger
	s.byResource = map[resourceKey]*subscribed{}
	s.bySession = map[call.Session]*sessionSubs{}
	s.byPrincipal = map[string]int{}
}

// subscribe is the final handler of resources/subscribe.
type subscribe struct{ f *Forward }

func (h *subscribe) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	if caps := c.Upstream.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the server of %q does not support subscriptions", text.Clip(c.Name, quoteLimit))}
	}
	sess := c.Client.Session
	if sess == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "resources/subscribe needs a session"}
	}
	c.UpstreamEra = c.Upstream.Era()
	sub, first, err := h.f.subs.join(sess, c.Client.Principal, resourceKey{c.Upstream.Name(), c.Target}, c.Upstream)
	if err != nil {
		return nil, err
	}
	if sub == nil { // subscribed already
		return json.RawMessage(`{}`), nil
	}
	if !first {
		<-sub.ready // bounded by the first subscriber's call timeout
		if sub.err != nil {
			return nil, upstreamError(c.Upstream, sub.err)
		}
		return json.RawMessage(`{}`), nil
	}
	sub.err = c.Upstream.Subscribe(ctx, c.Target)
	if sub.err != nil {
		h.f.subs.fail(resourceKey{c.Upstream.Name(), c.Target}, sub)
	}
	close(sub.ready)
	if sub.err != nil {
		return nil, upstreamError(c.Upstream, sub.err)
	}
	return json.RawMessage(`{}`), nil
}

// join adds sess to the subscribers of k. It returns nil when sess
// subscribed to k already, and whether sess is the first subscriber, who
// subscribes upstream. The first subscription of a session starts the
// goroutine that ends its subscriptions with it.
func (s *subscriptions) join(sess call.Session, principal string, k resourceKey, up *upstream.Conn) (*subscribed, bool, error) {
	s.mu.Lock()
	for {
		sub := s.byResource[k]
		if sub == nil || sub.closing == nil {
			break
		}
		closing := sub.closing
		s.mu.Unlock()
		<-closing // bounded by the upstream's call timeout
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	ss := s.bySession[sess]
	if ss != nil {
		if _, ok := ss.keys[k]; ok {
			return nil, false, nil
		}
		if len(ss.keys) >= maxSessionSubscriptions {
			return nil, false, tooMany("this session", maxSessionSubscriptions)
		}
	}
	if s.byPrincipal[principal] >= maxPrincipalSubscriptions {
		return nil, false, tooMany("this user", maxPrincipalSubscriptions)
	}
	sub := s.byResource[k]
	first := sub == nil
	if first {
		if len(s.byResource) >= maxSubscriptions {
			return nil, false, tooMany("the gateway", maxSubscriptions)
		}
		sub = &subscribed{up: up, uri: k.uri, sessions: map[call.Session]struct{}{}, ready: make(chan struct{})}
		s.byResource[k] = sub
	}
	if ss == nil {
		ss = &sessionSubs{principal: principal, keys: map[resourceKey]struct{}{}}
		s.bySession[sess] = ss
		go func() { // one per subscribing session, ending with it
			_ = sess.Wait()
			s.endSession(sess)
		}()
	}
	sub.sessions[sess] = struct{}{}
	ss.keys[k] = struct{}{}
	s.byPrincipal[principal]++
	return sub, first, nil
}

func tooMany(who string, n int) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("too many resources subscribed to by %s (%d): unsubscribe from some first", who, n)}
}

// fail forgets a subscription the upstream refused, for all the sessions
// that joined it meanwhile.
func (s *subscriptions) fail(k resourceKey, sub *subscribed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range sub.sessions {
		s.dropLocked(sess, k)
	}
	if s.byResource[k] == sub {
		delete(s.byResource, k)
	}
}

// leave removes sess from the subscribers of k; it returns the upstream
// subscription, closing, when sess was its last subscriber (the caller
// ends it upstream, then calls closed), nil otherwise (and when sess had
// not subscribed to k).
func (s *subscriptions) leave(sess call.Session, k resourceKey) *subscribed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaveLocked(sess, k)
}

func (s *subscriptions) leaveLocked(sess call.Session, k resourceKey) *subscribed {
	sub := s.byResource[k]
	if sub == nil {
		return nil
	}
	if _, ok := sub.sessions[sess]; !ok {
		return nil
	}
	s.dropLocked(sess, k)
	if len(sub.sessions) > 0 {
		return nil
	}
	sub.closing = make(chan struct{})
	return sub
}

// closed forgets an upstream subscription leave returned, once the
// upstream has been told, and releases the sessions waiting to subscribe.
func (s *subscriptions) closed(k resourceKey, sub *subscribed) {
	s.mu.Lock()
	if s.byResource[k] == sub {
		delete(s.byResource, k)
	}
	s.mu.Unlock()
	close(sub.closing)
}

// dropLocked removes one subscription of sess from the bookkeeping.
func (s *subscriptions) dropLocked(sess call.Session, k resourceKey) {
	if sub := s.byResource[k]; sub != nil {
		delete(sub.sessions, sess)
	}
	ss := s.bySession[sess]
	if ss == nil {
		return
	}
	if _, ok := ss.keys[k]; !ok {
		return
	}
	delete(ss.keys, k)
	if s.byPrincipal[ss.principal]--; s.byPrincipal[ss.principal] <= 0 {
		delete(s.byPrincipal, ss.principal)
	}
}

// endSession ends the subscriptions of a session that has ended,
// unsubscribing upstream from those it was the last subscriber of.
func (s *subscriptions) endSession(sess call.Session) {
	s.mu.Lock()
	last := map[resourceKey]*subscribed{}
	if ss := s.bySession[sess]; ss != nil {
		for k := range ss.keys {
			if sub := s.leaveLocked(sess, k); sub != nil {
				last[k] = sub
			}
		}
		delete(s.bySession, sess)
	}
	s.mu.Unlock()
	for k, sub := range last {
		s.unsubscribeUpstream(context.Background(), sub)
		s.closed(k, sub)
	}
}

// unsubscribeUpstream ends an upstream subscription nobody holds any more,
// once the upstream has answered its subscribe.
func (s *subscriptions) unsubscribeUpstream(ctx context.Context, sub *subscribed) {
	<-sub.ready
	if sub.err != nil {
		return
	}
	// Unsubscribe bounds the request by the upstream's call timeout.
	if err := sub.up.Unsubscribe(ctx, sub.uri); err != nil {
		s.logger.Info("upstream unsubscribe failed", "server", sub.up.Name(), "uri", text.Clip(sub.uri, quoteLimit), "error", err)
	}
}

// unsubscribe is the final handler of resources/unsubscribe: it ends the
// session's own subscription, if it has one.
type unsubscribe struct{ f *Forward }

func (h *unsubscribe) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	sess := c.Client.Session
	if sess == nil {
		return json.RawMessage(`{}`), nil
	}
	k := resourceKey{c.Upstream.Name(), c.Target}
	sub := h.f.subs.leave(sess, k)
	if sub == nil {
		return json.RawMessage(`{}`), nil
	}
	defer h.f.subs.closed(k, sub)
	c.UpstreamEra = c.Upstream.Era()
	// A 2026-07-28 client unsubscribes by ending its subscriptions/listen
	// stream, whose context the SDK then hands over already cancelled: the
	// upstream is told all the same.
	h.f.subs.unsubscribeUpstream(context.WithoutCancel(ctx), sub)
	return json.RawMessage(`{}`), nil
}
