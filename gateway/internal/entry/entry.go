package entry

//lint:file-ignore SA1019 a legacy session's log level is read to filter the log messages of its calls as the SDK does; protocol 2026-07-28 deprecates logging (SEP-2577) but 2025-11-25 clients still set it.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Router says which requests the entry serves itself, without the SDK
// server's handlers.
type Router interface {
	// Own reports a request the gateway answers itself rather than an
	// upstream (the tool_descriptions resource of progressive
	// disclosure): it does not cross the chain.
	Own(m *Message) bool
	// Direct reports whether a tools/call of the exposed tool name may be
	// served directly, and returns the tool's definition: the tool is
	// known and not under progressive disclosure (whose gate needs the
	// SDK's request), and, for a 2026-07-28 client (modern), its upstream
	// takes passed-through calls.
	Direct(name string, modern bool) (*mcp.Tool, bool)
}

// Options configure [New].
type Options struct {
	// Chain is the compiled chain every call crosses. Required.
	Chain call.Handler
	// Server is the SDK server that serves everything the entry does not
	// serve itself. Required.
	Server *mcp.Server
	// Router says which calls the entry serves itself. Nil means none.
	Router Router
	// Logger receives refused requests. Nil discards.
	Logger *slog.Logger
}

// Entry is where every client request enters the gateway: read once, by
// [Parse], refused when ambiguous, then served directly (tools/call over
// HTTP) or by the SDK server, whose [Entry.Middleware] turns the
// forwarded methods into Calls from the same reading.
type Entry struct {
	chain   call.Handler
	server  *mcp.Server
	router  Router
	logger  *slog.Logger
	pending pending
	live    live
	checked sessionChecks
	seq     atomic.Uint64
}

// New returns the entry.
func New(o Options) *Entry {
	e := &Entry{chain: o.Chain, server: o.Server, router: o.Router, logger: o.Logger}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	e.pending.m = map[string]reading{}
	e.live.init()
	return e
}

// forwarded reports the methods that cross the chain.
func forwarded(method string) bool {
	switch method {
	case call.ToolsCall, call.ToolsResolve, call.PromptsGet, call.ResourcesRead,
		call.Complete, call.Subscribe, call.Unsubscribe:
		return true
	}
	return false
}

// tokenHeader names, in the request the SDK server gets, the Message the
// entry read for it (see pending). A client's own header of that name is
// removed first.
const tokenHeader = "Preflight-Entry"

// pending holds the Messages of requests handed to the SDK server, by
// token, until its middleware takes them: the SDK gives handlers the
// request's headers (RequestExtra.Header), not its bytes.
type pending struct {
	mu sync.Mutex
	m  map[string]reading
	n  uint64
}

// reading is a Message and the transport it came over.
type reading struct {
	msg  *Message
	http bool
}

func (p *pending) put(m *Message, http bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	t := strconv.FormatUint(p.n, 36)
	p.m[t] = reading{m, http}
	return t
}

func (p *pending) take(token string) reading {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.m[token]
	delete(p.m, token)
	return r
}

// methodListen is a 2026-07-28 client's request for notifications: the
// SDK subscribes for it, with requests of its own that carry no headers.
const methodListen = "subscriptions/listen"

// listenerKey carries, in a subscriptions/listen's context, the principal
// of the client listening.
type listenerKey struct{}

// Middleware is a receiving middleware of the SDK server: requests of the
// forwarded methods become Calls, from the Message the entry read, and
// cross the chain; the rest go on. It must be installed above the SDK
// handlers a Call's Local serves (package resolve, package disclose).
func (e *Entry) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListen {
			if p, _ := auth.FromRequest(ctx, req); p.Name != "" {
				ctx = context.WithValue(ctx, listenerKey{}, p.Name)
			}
		}
		if !forwarded(method) || method == call.Subscribe || method == call.Unsubscribe {
			return next(ctx, method, req)
		}
		r := e.reading(req)
		if r.msg != nil && e.router != nil && e.router.Own(r.msg) {
			return next(ctx, method, req)
		}
		c, err := e.sdkCall(ctx, method, req, r)
		if err != nil {
			return nil, err
		}
		c.Local = func(ctx context.Context) (mcp.Result, error) { return next(ctx, method, req) }
		res, err := e.chain.Serve(ctx, c)
		if err != nil {
			return nil, err
		}
		return call.NewRaw(call.ForClient(c.Client, res)), nil
	}
}

// Subscribe and Unsubscribe are the SDK server's handlers of
// resources/subscribe and resources/unsubscribe (the SDK keeps who
// subscribed to what, for its resources/updated): the request crosses the
// chain.
func (e *Entry) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return e.subscription(ctx, call.Subscribe, req)
}

// Unsubscribe: see [Entry.Subscribe].
func (e *Entry) Unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return e.subscription(ctx, call.Unsubscribe, req)
}

func (e *Entry) subscription(ctx context.Context, method string, req mcp.Request) error {
	var (
		c   *call.Call
		err error
	)
	if req.GetExtra() == nil {
		// The SDK's own request, made from a 2026-07-28 client's
		// subscriptions/listen, which the entry read: its URIs are the
		// ones judged.
		c = &call.Call{Method: method, Client: sdkClient(ctx, req)}
		switch p := req.GetParams().(type) {
		case *mcp.SubscribeParams:
			c.Name = p.URI
		case *mcp.UnsubscribeParams:
			c.Name = p.URI
		}
	} else if c, err = e.sdkCall(ctx, method, req, e.reading(req)); err != nil {
		return err
	}
	_, err = e.chain.Serve(ctx, c)
	return err
}

// reading takes the reading of a request handed to the SDK.
func (e *Entry) reading(req mcp.Request) reading {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return reading{}
	}
	if t := extra.Header.Get(tokenHeader); t != "" {
		return e.pending.take(t)
	}
	return reading{}
}

// sdkCall makes the Call of a request the SDK server handed over, from
// the Message the entry read for it.
func (e *Entry) sdkCall(ctx context.Context, method string, req mcp.Request, r reading) (*call.Call, error) {
	if r.msg == nil {
		// Every transport the gateway serves goes through the entry: a
		// request it did not read is not judged, so it is not forwarded.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the request did not come through the gateway's entry", method)}
	}
	client := sdkClient(ctx, req)
	if !r.http {
		client.Header = nil
	}
	return CallOf(r.msg, client)
}

// sdkClient describes the client of a request the SDK server handed over.
func sdkClient(ctx context.Context, req mcp.Request) *call.Client {
	c := &call.Client{}
	if r, ok := req.(interface {
		ProtocolVersion() string
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		c.Version = r.ProtocolVersion()
		c.Capabilities = r.ClientCapabilities()
	}
	if extra := req.GetExtra(); extra != nil {
		c.Header = extra.Header
		p, _ := auth.FromRequest(ctx, req)
		c.Principal = p.Name
	} else if p, ok := ctx.Value(listenerKey{}).(string); ok {
		// The SDK's own request, made from a subscriptions/listen: the
		// listener's.
		c.Principal = p
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	c.Conn = &sdkConn{ctx: ctx, ss: ss, rounds: c.Modern()}
	if ss != nil {
		c.Session = ss
		if !c.Modern() {
			c.SessionID = ss.ID()
		}
	}
	return c
}

// CallOf makes the Call of a request from the entry's reading of it.
func CallOf(m *Message, client *call.Client) (*call.Call, error) {
	c := &call.Call{Method: m.Method, Client: client, Meta: m.Meta}
	switch m.Method {
	case call.ToolsCall, call.ToolsResolve, call.PromptsGet:
		if !m.HasName {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Method + `: params.name must be a string`}
		}
		c.Name = m.Name
		args, err := m.CanonicalArguments()
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Method + ": params.arguments: " + err.Error()}
		}
		c.Arguments = args
		if m.Method != call.PromptsGet {
			if a, err := m.Args(); err == nil {
				c.SetArgs(a)
			}
		}
	case call.ResourcesRead, call.Subscribe, call.Unsubscribe:
		if !m.HasURI {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Method + `: params.uri must be a string`}
		}
		c.Name = m.URI
	case call.Complete:
		c.Params = m.Params
		c.Name = completionRef(m.Params)
	}
	if m.HasRequestState {
		c.RequestState = m.RequestState
	}
	if len(m.InputResponses) > 0 && string(m.InputResponses) != "null" {
		var r mcp.InputResponseMap
		if err := json.Unmarshal(m.InputResponses, &r); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: m.Method + ": params.inputResponses: " + text.Clip(err.Error(), 200)}
		}
		c.InputResponses = r
	}
	return c, nil
}

// completionRef names a completion's reference: a prompt's name or a
// resource's URI.
func completionRef(params json.RawMessage) string {
	var p struct {
		Ref struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Ref.URI != "" {
		return p.Ref.URI
	}
	return p.Ref.Name
}

// sdkConn reaches the client of a request the SDK server handed over,
// through its session: within the call for a legacy session, in rounds
// for a 2026-07-28 request.
type sdkConn struct {
	ctx    context.Context // the request's: the SDK writes on its stream
	ss     *mcp.ServerSession
	rounds bool
}

func (s *sdkConn) Ask(ctx context.Context, method string, params mcp.InputRequest) (mcp.InputResponse, error) {
	if s.rounds {
		return nil, call.ErrRound
	}
	if s.ss == nil {
		return nil, call.ErrCannotAsk
	}
	switch p := params.(type) {
	case *mcp.ElicitParams:
		return s.ss.Elicit(ctx, p)
	case *mcp.CreateMessageWithToolsParams:
		return s.ss.CreateMessageWithTools(ctx, p)
	case *mcp.CreateMessageParams:
		return s.ss.CreateMessage(ctx, p)
	case *mcp.ListRootsParams:
		return s.ss.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("unknown question %s (%T)", method, params)
}

func (s *sdkConn) Notify(_ context.Context, method string, params json.RawMessage) {
	if s.ss == nil || s.ctx.Err() != nil {
		return
	}
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			_ = s.ss.NotifyProgress(s.ctx, &p)
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) == nil {
			_ = s.ss.Log(s.ctx, &p)
		}
	}
}

func (s *sdkConn) Completed(ctx context.Context, id string) {
	if !s.rounds && s.ss != nil {
		_ = s.ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
	}
}

// modernVersion reports a 2026-07-28 (or later) protocol version.
func modernVersion(v string) bool { return len(v) == 10 && v >= "2026-07-28" }
