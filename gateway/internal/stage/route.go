package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Directory is what the route stage looks names up in.
type Directory interface {
	// View is the current aggregated catalog.
	View() *catalog.View
	// Upstream returns the upstream of that name.
	Upstream(name string) (*upstream.Conn, bool)
}

// Route finds the upstream of the call's tool, prompt, resource or
// completion reference and its name there. An unknown tool or prompt is
// -32602 and an unknown resource -32002, as the SDK answers them, and a
// URI several upstreams serve -32602, before any upstream is involved. An
// answer is routed already (to the upstream that asked).
type Route struct {
	Dir Directory
}

// Name implements call.Stage.
func (*Route) Name() string { return "route" }

// Serve implements call.Stage.
func (r *Route) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Method == call.Answer {
		return next.Serve(ctx, c)
	}
	v := r.Dir.View()
	var up string
	switch c.Method {
	case call.ToolsCall, call.ToolsResolve:
		t, ok := v.Tool(c.Name)
		if !ok {
			return nil, invalidParams("unknown tool %q", text.Clip(c.Name, quoteLimit))
		}
		c.Tool, c.Target, up = t, t.Name, t.Upstream
	case call.PromptsGet:
		p, ok := v.Prompt(c.Name)
		if !ok {
			return nil, invalidParams("unknown prompt %q", text.Clip(c.Name, quoteLimit))
		}
		c.Target, up = p.Name, p.Upstream
	case call.ResourcesRead, call.Subscribe, call.Unsubscribe:
		u, target, err := resourceRoute(v, c.Name)
		if err != nil {
			return nil, err
		}
		c.Target, up = target, u
	case call.Complete:
		target, u, err := completionRoute(v, c)
		if err != nil {
			return nil, err
		}
		c.Target, up = target, u
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not routed", c.Method)}
	}
	conn, ok := r.Dir.Upstream(up)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("upstream %q is no longer configured; list again", up)}
	}
	c.Upstream = conn
	return next.Serve(ctx, c)
}

// completionRoute finds the upstream of a completion/complete's reference
// (a prompt by its exposed name, or a resource template or resource by
// URI) and the reference's name there.
func completionRoute(v *catalog.View, c *call.Call) (target, up string, err error) {
	var p struct {
		Ref *struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(c.Params, &p); err != nil || p.Ref == nil {
		return "", "", invalidParams("completion/complete: params.ref is required")
	}
	switch p.Ref.Type {
	case "ref/prompt":
		pr, ok := v.Prompt(p.Ref.Name)
		if !ok {
			return "", "", invalidParams("unknown prompt %q", text.Clip(p.Ref.Name, quoteLimit))
		}
		return pr.Name, pr.Upstream, nil
	case "ref/resource":
		if t, ok := v.TemplateRef(p.Ref.URI); ok {
			return t.URITemplate, t.Upstream, nil
		}
		u, target, err := v.Resource(p.Ref.URI)
		if errors.Is(err, catalog.ErrUnknownResource) {
			return "", "", invalidParams("unknown resource %q", text.Clip(p.Ref.URI, quoteLimit))
		} else if err != nil {
			return "", "", invalidParams("%s", err)
		}
		return target, u, nil
	}
	return "", "", invalidParams("unknown reference type %q", text.Clip(p.Ref.Type, quoteLimit))
}

// resourceRoute finds the upstream of a URI as a client names it and the
// URI there: an unknown URI is -32002, one that several upstreams serve
// -32602 naming the forms that reach each.
func resourceRoute(v *catalog.View, uri string) (up, target string, err error) {
	up, target, err = v.Resource(uri)
	var amb *catalog.AmbiguousURIError
	switch {
	case errors.As(err, &amb):
		return "", "", invalidParams("%s", amb.Error())
	case err != nil:
		return "", "", mcp.ResourceNotFoundError(text.Clip(uri, quoteLimit))
	}
	return up, target, nil
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
