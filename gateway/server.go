package gateway

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/resolve"
)

// newServer builds the SDK server clients talk to. The SDK serves the
// protocol (both eras, sessions, headers, subscriptions, notifications);
// the gateway's middleware, outermost, serves the four lists from the raw
// catalog and sends tools/call, prompts/get and resources/read down the
// call path. tools/resolve is package resolve's, over the tools the
// gateway registers.
func (g *Gateway) newServer(info *mcp.Implementation) *mcp.Server {
	s := mcp.NewServer(info, &mcp.ServerOptions{
		Instructions: g.opts.Instructions,
		Logger:       quietlog.Warn(g.logger),
		PageSize:     g.opts.PageSize,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:  g.complete,
		SubscribeHandler:   g.subscribe,
		UnsubscribeHandler: g.unsubscribe,
	})
	g.rs = resolve.NewServer(s, &resolve.ServerOptions{Logger: g.logger})
	g.installDisclosure(s)
	s.AddReceivingMiddleware(g.middleware)
	return s
}

// middleware serves the methods the gateway answers itself.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			g.wantLazy()
			return g.list(method, req)
		case upstream.MethodCallTool, upstream.MethodGetPrompt, upstream.MethodReadResource:
			if method == upstream.MethodReadResource && g.disclosureRead(req) {
				return next(ctx, method, req)
			}
			if method == upstream.MethodCallTool {
				if res, err, refused := g.gate(ctx, req, next); refused {
					return res, err
				}
			}
			c, err := callOf(method, req)
			if err != nil {
				return nil, err
			}
			return g.chain.Serve(ctx, c)
		}
		return next(ctx, method, req)
	}
}

// wantLazy connects lazy upstreams when a client first lists.
func (g *Gateway) wantLazy() {
	for _, m := range g.ups.Load().members {
		m.conn.Want()
	}
}

// clientOf describes the client of a request.
func clientOf(req mcp.Request) *pipeline.Client {
	c := &pipeline.Client{Request: req}
	if r, ok := req.(interface {
		ProtocolVersion() string
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		c.Version = r.ProtocolVersion()
		c.Capabilities = r.ClientCapabilities()
	}
	c.Modern = c.Version >= preflight.ProtocolStateless
	c.Session, _ = req.GetSession().(*mcp.ServerSession)
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		c.Principal = extra.TokenInfo.UserID
	}
	return c
}

// callOf turns an SDK request into a pipeline call.
func callOf(method string, req mcp.Request) (*pipeline.Call, error) {
	c := &pipeline.Call{Method: method, Client: clientOf(req)}
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p == nil {
			return nil, invalidParams("tools/call: missing params")
		}
		c.Name, c.Arguments, c.Meta, c.InputResponses, c.RequestState = p.Name, p.Arguments, p.Meta, p.InputResponses, p.RequestState
		if len(c.Arguments) > 0 && string(c.Arguments) == "null" {
			c.Arguments = nil
		}
	case *mcp.GetPromptParams:
		if p == nil {
			return nil, invalidParams("prompts/get: missing params")
		}
		c.Name, c.Meta, c.InputResponses, c.RequestState = p.Name, p.Meta, p.InputResponses, p.RequestState
		if len(p.Arguments) > 0 {
			c.Arguments, _ = json.Marshal(p.Arguments)
		}
	case *mcp.ReadResourceParams:
		if p == nil {
			return nil, invalidParams("resources/read: missing params")
		}
		c.Name, c.Meta, c.InputResponses, c.RequestState = p.URI, p.Meta, p.InputResponses, p.RequestState
	default:
		return nil, invalidParams("%s: unexpected params %T", method, p)
	}
	return c, nil
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// Results of the four lists: the SDK's types (for resultType, cache-control
// and _meta) with the items as raw JSON.
type (
	toolsPage struct {
		*mcp.ListToolsResult
		Tools []json.RawMessage `json:"tools"`
	}
	promptsPage struct {
		*mcp.ListPromptsResult
		Prompts []json.RawMessage `json:"prompts"`
	}
	resourcesPage struct {
		*mcp.ListResourcesResult
		Resources []json.RawMessage `json:"resources"`
	}
	templatesPage struct {
		*mcp.ListResourceTemplatesResult
		ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	}
)

// list serves one page of a list from the current snapshot.
func (g *Gateway) list(method string, req mcp.Request) (mcp.Result, error) {
	snap := g.state.Load()
	var cursor string
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListPromptsParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListResourcesParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			cursor = p.Cursor
		}
	}
	var n int
	switch method {
	case "tools/list":
		n = len(snap.tools)
	case "prompts/list":
		n = len(snap.prompts)
	case "resources/list":
		n = len(snap.resources)
	default:
		n = len(snap.templates)
	}
	from, to, next, err := g.page(snap.version, cursor, n)
	if err != nil {
		return nil, err
	}
	cacheable := func(c catalog.Cache) mcp.Cacheable {
		scope := c.Scope
		if scope == "" {
			scope = catalog.ScopePrivate
		}
		return mcp.Cacheable{TTLMs: c.TTLMs, CacheScope: scope}
	}
	v := snap.view
	switch method {
	case "tools/list":
		marked := declaresResolution(req)
		items := make([]json.RawMessage, 0, to-from)
		for _, t := range snap.tools[from:to] {
			if marked {
				items = append(items, t.marked)
			} else {
				items = append(items, t.plain)
			}
		}
		return &toolsPage{ListToolsResult: &mcp.ListToolsResult{NextCursor: next, Cacheable: cacheable(v.ToolsCache)}, Tools: items}, nil
	case "prompts/list":
		return &promptsPage{ListPromptsResult: &mcp.ListPromptsResult{NextCursor: next, Cacheable: cacheable(v.PromptsCache)}, Prompts: snap.prompts[from:to:to]}, nil
	case "resources/list":
		return &resourcesPage{ListResourcesResult: &mcp.ListResourcesResult{NextCursor: next, Cacheable: cacheable(v.ResourcesCache)}, Resources: snap.resources[from:to:to]}, nil
	default:
		return &templatesPage{ListResourceTemplatesResult: &mcp.ListResourceTemplatesResult{NextCursor: next, Cacheable: cacheable(v.TemplatesCache)}, ResourceTemplates: snap.templates[from:to:to]}, nil
	}
}

// page returns the bounds of the page at cursor and the next cursor. A
// cursor names the catalog version it was made for; one from an older
// version is refused, so that a client never stitches pages of two
// catalogs together.
func (g *Gateway) page(version uint64, cursor string, n int) (from, to int, next string, err error) {
	if cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(cursor)
		v, off, ok := strings.Cut(string(b), ":")
		ver, verr := strconv.ParseUint(v, 10, 64)
		o, oerr := strconv.Atoi(off)
		if derr != nil || !ok || verr != nil || oerr != nil || o < 0 || o > n {
			return 0, 0, "", invalidParams("invalid cursor: use the nextCursor of the previous page")
		}
		if ver != version {
			return 0, 0, "", invalidParams("cursor expired: the list changed since; list again from the start")
		}
		from = o
	}
	to = min(from+g.opts.PageSize, n)
	if to < n {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatUint(version, 10) + ":" + strconv.Itoa(to)))
	}
	return from, to, next, nil
}

// declaresResolution reports whether the request declared the
// tool-resolution extension, so its tools/list carries the per-tool
// marker.
func declaresResolution(req mcp.Request) bool {
	r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	})
	if !ok {
		return false
	}
	caps := r.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[preflight.ExtensionToolResolution]
	return ok
}

// complete routes completion/complete to the upstream of the prompt or
// resource template it names.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	ref := *p.Ref
	p.Ref = &ref
	v := g.View()
	var up string
	switch ref.Type {
	case "ref/prompt":
		pr, ok := v.Prompt(ref.Name)
		if !ok {
			return nil, invalidParams("unknown prompt %q", clip(ref.Name))
		}
		ref.Name, up = pr.Name, pr.Upstream
	case "ref/resource":
		if t, ok := v.TemplateByPattern(ref.URI); ok {
			up = t.Upstream
		} else if u, ok := v.ResourceUpstream(ref.URI); ok {
			up = u
		} else {
			return nil, invalidParams("unknown resource %q", clip(ref.URI))
		}
	default:
		return nil, invalidParams("unknown reference type %q", clip(ref.Type))
	}
	conn, _ := g.Upstream(up)
	res, err := conn.Complete(ctx, &p)
	if err != nil {
		return nil, forwardError(conn, err)
	}
	return res, nil
}

// forwardError passes an upstream's JSON-RPC error on, or names the
// upstream.
func forwardError(c *upstream.Conn, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %s", c.Name(), upstream.Sanitize(clip(err.Error())))}
}
