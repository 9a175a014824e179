package gateway

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
)

// discloseSet is which upstreams' tools are disclosed; Reload replaces it.
type discloseSet struct {
	all   bool
	names map[string]bool
}

func newDiscloseSet(d *Disclosure) *discloseSet {
	if d.Servers == nil {
		return &discloseSet{all: true}
	}
	s := &discloseSet{names: make(map[string]bool, len(d.Servers))}
	for _, name := range d.Servers {
		s.names[name] = true
	}
	return s
}

// equal reports whether s and o disclose the same upstreams.
func (s *discloseSet) equal(o *discloseSet) bool {
	return s.all == o.all && maps.Equal(s.names, o.names)
}

// discloses reports whether the tools of the named upstream are disclosed.
func (g *Gateway) discloses(up string) bool {
	d := g.disclosed.Load()
	return d != nil && (d.all || d.names[up])
}

// gatePassed is what the innermost middleware answers a tools/call that
// package disclose let through: the gateway then serves the call itself.
var gatePassed = &mcp.CallToolResult{}

// installDisclosure installs package disclose on the SDK server, below the
// gateway's own middleware. The gateway answers tools/list itself (with
// minimal entries for disclosed tools, see [Gateway.rebuild]); disclose
// sees the SDK's mirror of the catalog, filtered to the disclosed tools,
// so it serves their full definitions and gates their calls; a call it
// lets through stops at the filter with gatePassed instead of reaching
// the SDK's placeholder handler.
func (g *Gateway) installDisclosure(s *mcp.Server) {
	d := g.opts.Disclosure
	if d == nil {
		return
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				return gatePassed, nil
			case "tools/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					out := *lr
					out.Tools = nil
					v := g.View()
					for _, t := range lr.Tools {
						if ct, ok := v.Tool(t.Name); ok && g.discloses(ct.Upstream) {
							out.Tools = append(out.Tools, t)
						}
					}
					return &out, nil
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	})
	g.disclosed.Store(newDiscloseSet(d))
	opts := d.Options
	if opts.Logger == nil {
		opts.Logger = g.logger
	}
	g.disclosure = disclose.New(s, &opts)
	g.discloseLevel = opts.Schema
	res, _ := json.Marshal(&mcp.Resource{
		URI:         g.disclosure.URI(),
		Name:        disclose.ResourceName,
		Title:       "Tool descriptions",
		Description: disclose.ResourceDescription(g.disclosure.URI()),
		MIMEType:    "application/json",
	})
	tmpl, _ := json.Marshal(&mcp.ResourceTemplate{
		URITemplate: g.disclosure.URI() + "{?tools}",
		Name:        "tool_descriptions",
		Title:       "Tool descriptions, selected",
		Description: "Full definitions of the named tools (comma-separated, exactly as in tools/list). " + disclose.ResourceDescription(g.disclosure.URI()),
		MIMEType:    "application/json",
	})
	g.discloseResource, g.discloseTemplate = res, tmpl
}

// Own implements entry.Router: a resources/read of the tool_descriptions
// resource is package disclose's to answer, not an upstream's.
func (g *Gateway) Own(m *entry.Message) bool {
	if g.disclosure == nil || m.Method != call.ResourcesRead || !m.HasURI {
		return false
	}
	_, ours, _ := disclose.ParseSelection(g.disclosure.URI(), m.URI, -1)
	return ours
}

// Check implements stage.Gate: a tools/call of a disclosed tool goes
// through package disclose's check, below the entry on the SDK's path
// (c.Local); a refusal (a TOOL_DESCRIPTION_REQUIRED tool result, or a
// JSON-RPC error) ends the call. Such calls always take the SDK's path
// (see [Gateway.Direct]); one that did not is refused, not let through.
func (g *Gateway) Check(ctx context.Context, c *call.Call) (json.RawMessage, error, bool) {
	if g.disclosure == nil || c.Tool == nil || !g.discloses(c.Tool.Upstream) {
		return nil, nil, false
	}
	if c.Local == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tools/call: the disclosure of this tool cannot be checked on this path"}, true
	}
	res, err := c.Local(ctx)
	if err != nil {
		return nil, err, true
	}
	if res == gatePassed {
		return nil, nil, false
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the disclosure refusal: " + err.Error()}, true
	}
	return b, nil, true
}

// minimalListing is t's tools/list entry under disclosure: disclose's
// minimal form of the tool the SDK mirror holds, with the gateway's
// markers.
func (g *Gateway) minimalListing(t *catalog.Tool, full toolJSON) toolJSON {
	if t.Tool == nil {
		return full
	}
	tt := *t.Tool
	tt.Name = t.Exposed
	raw, err := json.Marshal(disclose.Minimal(&tt, g.discloseLevel))
	if err != nil {
		return full
	}
	mt := *t
	mt.Exposed, mt.Name, mt.Raw = t.Exposed, t.Exposed, raw
	return toolListing(&mt)
}
