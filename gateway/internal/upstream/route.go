package upstream

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// callTable knows the calls running on one upstream connection, to route
// what the upstream sends about them: progress notifications by their
// progress token, and log messages and mid-call requests (which carry
// nothing that names their call) to the only call in flight.
//
// A request a legacy upstream sends while two or more calls are in flight
// cannot be attributed: the gateway refuses it rather than risk showing one
// client's question to another (see docs/design.md). Over streamable HTTP
// the upstream sends it on the call's own response stream, but the SDK's
// client does not pass that on.
type callTable struct {
	mu     sync.Mutex
	live   map[*liveCall]struct{}
	tokens map[string]progressRoute
	seq    uint64
}

type liveCall struct {
	peer Peer
	ex   *legacyExchange    // nil for a 2026-07-28 upstream's call
	cs   *mcp.ClientSession // the session it runs on; nil: the upstream's only one
}

type progressRoute struct {
	peer  Peer
	token any // the client's own token
}

func (t *callTable) init() {
	t.live = map[*liveCall]struct{}{}
	t.tokens = map[string]progressRoute{}
}

// enter records a running call on session cs (nil for a session
// passthrough's) until done is called.
func (t *callTable) enter(peer Peer, ex *legacyExchange, cs *mcp.ClientSession) (done func()) {
	lc := &liveCall{peer: peer, ex: ex, cs: cs}
	t.mu.Lock()
	t.live[lc] = struct{}{}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.live, lc)
		t.mu.Unlock()
	}
}

// sole returns the only call in flight on the session a message of the
// upstream came on (a principal's own session, users.go, carries only
// their calls), nil if there are none or several.
func (t *callTable) sole(req mcp.Request) *liveCall {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	t.mu.Lock()
	defer t.mu.Unlock()
	var found *liveCall
	for lc := range t.live {
		if lc.cs != nil && cs != nil && lc.cs != cs {
			continue
		}
		if found != nil {
			return nil
		}
		found = lc
	}
	return found
}

// progress maps a new token of the gateway's to a client's token until
// forget is called.
func (t *callTable) progress(token any, peer Peer) (own string, forget func()) {
	t.mu.Lock()
	t.seq++
	own = "preflight-" + strconv.FormatUint(t.seq, 10)
	t.tokens[own] = progressRoute{peer: peer, token: token}
	t.mu.Unlock()
	return own, func() {
		t.mu.Lock()
		delete(t.tokens, own)
		t.mu.Unlock()
	}
}

func (t *callTable) route(token any) (progressRoute, bool) {
	s, ok := token.(string)
	if !ok {
		return progressRoute{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.tokens[s]
	return r, ok
}

// questionRouter is a receiving middleware of the upstream client: it
// routes the upstream's elicitation, sampling and roots requests to the
// client of the call in flight.
func (c *Conn) questionRouter(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case MethodElicit, MethodCreateMessage, MethodListRoots:
		default:
			return next(ctx, method, req)
		}
		params, _ := req.GetParams().(mcp.InputRequest)
		if params == nil {
			if method != MethodListRoots {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": missing params"}
			}
			params = &mcp.ListRootsParams{}
		}
		lc := c.calls.sole(req)
		if lc == nil || lc.ex == nil {
			c.logger.Warn("upstream request outside a single call in flight; refused", "method", method)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("preflight gateway: cannot tell which call %s belongs to (it arrived with no single call in flight); ask within a call, one call at a time", method)}
		}
		return lc.ex.ask(ctx, method, params)
	}
}

// onLog forwards a log message to the client of the only call in flight;
// the gateway's log gets it too.
func (c *Conn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	if req.Params == nil {
		return
	}
	c.logger.Debug("upstream log message", "level", string(req.Params.Level), "logger", text.Sanitize(req.Params.Logger))
	if lc := c.calls.sole(req); lc != nil && lc.peer != nil {
		lc.peer.Log(ctx, req.Params)
	}
}

// onProgress forwards a progress notification to the call that owns its
// token, with the client's own token.
func (c *Conn) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	r, ok := c.calls.route(req.Params.ProgressToken)
	if !ok {
		return
	}
	p := *req.Params
	p.ProgressToken = r.token
	r.peer.Progress(ctx, &p)
}
