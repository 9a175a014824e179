package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"sync/atomic"

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

// newDiscloseSet returns the set of servers, nil meaning all.
func newDiscloseSet(servers []string) *discloseSet {
	if servers == nil {
		return &discloseSet{all: true}
	}
	s := &discloseSet{names: make(map[string]bool, len(servers))}
	for _, name := range servers {
		s.names[name] = true
	}
	return s
}

// equal reports whether s and o disclose the same upstreams.
func (s *discloseSet) equal(o *discloseSet) bool {
	return s.all == o.all && maps.Equal(s.names, o.names)
}

// disclosure is progressive disclosure as the gateway runs it: package
// disclose on the SDK server, the upstreams whose tools it covers (Reload
// replaces them), and the resource and template it adds to the lists. A
// nil disclosure is off.
type disclosure struct {
	server             *disclose.Server
	level              disclose.SchemaLevel
	resource, template json.RawMessage
	set                atomic.Pointer[discloseSet]
}

// discloses reports whether the tools of the named upstream are disclosed.
func (ds *disclosure) discloses(up string) bool {
	if ds == nil {
		return false
	}
	d := ds.set.Load()
	return d.all || d.names[up]
}

// gatePassed is what the innermost middleware answers a tools/call that
// package disclose let through: the gateway then serves the call itself.
var gatePassed = &mcp.CallToolResult{}

// newDisclosure installs package disclose on the SDK server, below the
// gateway's own middleware, for the upstreams named by servers (nil: all). The gateway
// answers tools/list itself (with minimal entries for disclosed tools, see
// [Gateway.rebuild]); disclose sees the SDK's mirror of the catalog (view
// is the current one), filtered to the disclosed tools, so it serves their
// full definitions and gates their calls; a call it lets through stops at
// the filter with gatePassed instead of reaching the SDK's placeholder
// handler.
func newDisclosure(s *mcp.Server, servers []string, opts disclose.Options, logger *slog.Logger, view func() *catalog.View) *disclosure {
	ds := &disclosure{}
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
					v := view()
					for _, t := range lr.Tools {
						if ct, ok := v.Tool(t.Name); ok && ds.discloses(ct.Upstream) {
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
	ds.set.Store(newDiscloseSet(servers))
	if opts.Logger == nil {
		opts.Logger = logger
	}
	ds.server = disclose.New(s, &opts)
	ds.level = opts.Schema
	uri := ds.server.URI()
	ds.resource, _ = json.Marshal(&mcp.Resource{
		URI:         uri,
		Name:        disclose.ResourceName,
		Title:       "Tool descriptions",
		Description: disclose.ResourceDescription(uri),
		MIMEType:    "application/json",
	})
	ds.template, _ = json.Marshal(&mcp.ResourceTemplate{
		URITemplate: uri + "{?tools}",
		Name:        "tool_descriptions",
		Title:       "Tool descriptions, selected",
		Description: "Full definitions of the named tools (comma-separated, exactly as in tools/list). " + disclose.ResourceDescription(uri),
		MIMEType:    "application/json",
	})
	return ds
}

// owns reports whether m is a resources/read of the tool_descriptions
// resource, which is package disclose's to answer, not an upstream's.
func (ds *disclosure) owns(m *entry.Message) bool {
	if ds == nil || m.Method != call.ResourcesRead || !m.HasURI {
		return false
	}
	_, ours, _ := disclose.ParseSelection(ds.server.URI(), m.URI, -1)
	return ours
}

// check is stage.Gate's Check: a tools/call of a disclosed tool goes
// through package disclose's check, below the entry on the SDK's path
// (c.Local); a refusal (a TOOL_DESCRIPTION_REQUIRED tool result, or a
// JSON-RPC error) ends the call. Such calls always take the SDK's path
// (see [Gateway.Direct]); one that did not is refused, not let through.
func (ds *disclosure) check(ctx context.Context, c *call.Call) (json.RawMessage, error, bool) {
	if c.Tool == nil || !ds.discloses(c.Tool.Upstream) {
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

// minimal is t's tools/list entry if t is disclosed: disclose's minimal
// form of the tool the SDK mirror holds, under the exposed name.
func (ds *disclosure) minimal(t *catalog.Tool) (*catalog.Tool, bool) {
	if !ds.discloses(t.Upstream) || t.Tool == nil {
		return nil, false
	}
	tt := *t.Tool
	tt.Name = t.Exposed
	raw, err := json.Marshal(disclose.Minimal(&tt, ds.level))
	if err != nil {
		return nil, false
	}
	mt := *t
	mt.Exposed, mt.Name, mt.Raw = t.Exposed, t.Exposed, raw
	return &mt, true
}
