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
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/mirror"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/resolve"
)

// newServer builds the SDK server clients talk to, and the entry in front
// of it. The SDK serves the protocol (both eras, sessions, headers,
// subscriptions, notifications); the gateway's middleware, outermost,
// serves the four lists from the raw catalog; the entry's, below it, sends
// every forwarded method down the chain; tools/resolve is package
// resolve's, over the tools the gateway mirrors, from the resolution the
// chain made.
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
		CompletionHandler: unreachableComplete,
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return g.entry.Subscribe(ctx, req)
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return g.entry.Unsubscribe(ctx, req)
		},
	})
	g.entry = entry.New(entry.Options{Chain: g.chain, Server: s, Router: g, Logger: g.logger})
	g.rs = resolve.NewServer(s, &resolve.ServerOptions{Logger: g.logger})
	g.mirror = mirror.New(s, g.rs, g.toolResolver(), g.logger)
	if d := g.opts.Disclosure; d != nil {
		g.disclosure = newDisclosure(s, d.Servers, d.Options, g.logger, g.View)
	}
	s.AddReceivingMiddleware(g.entry.Middleware, g.entry.TrackLogLevels)
	s.AddReceivingMiddleware(g.middleware)
	return s
}

// toolResolver is the resolver package resolve calls for tools/resolve:
// the resolution the chain's resolve stage made for this very request
// (route, hold, pin and resolve ran before; package resolve then checks
// its bounds and encodes it in the shape the client asked for).
func (g *Gateway) toolResolver() resolve.Resolver {
	return resolve.ResolverFunc(func(ctx context.Context, rc *resolve.Call) (resolve.Resolution, error) {
		c := call.FromContext(ctx)
		if c == nil || c.Resolution == nil || c.Name != rc.Name {
			return resolve.Resolution{}, fmt.Errorf("tools/resolve of %q did not come through the gateway's chain", rc.Name)
		}
		r := *c.Resolution.AsResolution()
		if g.decider != nil {
			// The answer says what the gateway will do with this call:
			// a call it will ask about requires confirmation.
			if d := g.decider.Decide(c); d.Verdict == call.Confirm && !d.DryRun {
				yes := true
				r.Hints.RequiresConfirmation = &yes
			}
		}
		return r, nil
	})
}

// middleware serves the lists from the catalog; the rest goes to the
// entry's middleware and the SDK below it.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			g.wantLazy()
			return g.list(method, req)
		}
		return next(ctx, method, req)
	}
}

// Direct implements entry.Router: a tools/call of a known tool that is not
// under progressive disclosure is served without the SDK; a 2026-07-28
// client's, only when the tool's upstream takes passed-through calls.
func (g *Gateway) Direct(name string, modern bool) (*mcp.Tool, bool) {
	t, ok := g.View().Tool(name)
	if !ok || g.disclosure.discloses(t.Upstream) {
		return nil, false
	}
	if !modern {
		return t.Tool, true
	}
	conn, ok := g.Upstream(t.Upstream)
	return t.Tool, ok && conn.Passthrough()
}

// Own implements entry.Router: a resources/read of the tool_descriptions
// resource is package disclose's to answer, not an upstream's.
func (g *Gateway) Own(m *entry.Message) bool { return g.disclosure.owns(m) }

// Check implements stage.Gate: see the disclosure's check.
func (g *Gateway) Check(ctx context.Context, c *call.Call) (json.RawMessage, error, bool) {
	if g.disclosure == nil {
		return nil, nil, false
	}
	return g.disclosure.check(ctx, c)
}

// wantLazy connects lazy upstreams when a client first lists.
func (g *Gateway) wantLazy() {
	for _, m := range g.ups.Load().members {
		m.conn.Want()
	}
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
		tools := make([]json.RawMessage, 0, to-from)
		for _, t := range snap.tools[from:to] {
			if marked {
				tools = append(tools, t.marked)
			} else {
				tools = append(tools, t.plain)
			}
		}
		return &toolsPage{ListToolsResult: &mcp.ListToolsResult{NextCursor: next, Cacheable: cacheable(v.ToolsCache)}, Tools: tools}, nil
	case "prompts/list":
		return &promptsPage{ListPromptsResult: &mcp.ListPromptsResult{NextCursor: next, Cacheable: cacheable(v.PromptsCache)}, Prompts: items(snap.prompts[from:to:to])}, nil
	case "resources/list":
		return &resourcesPage{ListResourcesResult: &mcp.ListResourcesResult{NextCursor: next, Cacheable: cacheable(v.ResourcesCache)}, Resources: items(snap.resources[from:to:to])}, nil
	default:
		return &templatesPage{ListResourceTemplatesResult: &mcp.ListResourceTemplatesResult{NextCursor: next, Cacheable: cacheable(v.TemplatesCache)}, ResourceTemplates: items(snap.templates[from:to:to])}, nil
	}
}

// items returns a page's items, empty rather than nil: a list result is
// always an array, [] when there is nothing to list (clients that
// validate results refuse null).
func items(page []json.RawMessage) []json.RawMessage {
	if page == nil {
		return []json.RawMessage{}
	}
	return page
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

func unreachableComplete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return nil, errors.New("unreachable: the gateway serves completion/complete itself")
}

// resourceUpdated passes an upstream's resources/updated to the clients
// subscribed to it (the SDK server knows who they are), under each URI
// that reaches that upstream's resource: the clients of another upstream's
// resource of the same URI are not told.
func (g *Gateway) resourceUpdated(ctx context.Context, c *upstream.Conn, p *mcp.ResourceUpdatedNotificationParams) {
	snap := g.state.Load()
	if snap == nil {
		return
	}
	for _, uri := range snap.view.ClientURIs(c.Name(), p.URI) {
		pp := *p
		pp.URI = uri
		_ = g.server.ResourceUpdated(ctx, &pp)
	}
}
