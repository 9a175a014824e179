// Package mirror keeps the SDK server's registry in step with the
// gateway's catalog. The gateway serves lists and calls from its own
// catalog; the registry mirrors it because the SDK validates standard
// headers against each tool's input schema, package resolve serves
// tools/resolve over it, and the SDK sends list_changed notifications when
// items come and go.
package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// Mirror is what is registered with one SDK server. It is not safe for
// concurrent use: one goroutine syncs it.
type Mirror struct {
	server   *mcp.Server
	rs       *resolve.Server
	resolver resolve.Resolver
	logger   *slog.Logger
	// By exposed name (URI, URI template): the upstream and the raw
	// definition registered, so that an unchanged item is not registered
	// again.
	tools, prompts, resources, templates map[string]string
}

// New returns an empty mirror of s, whose tools are registered through rs
// with resolver answering their tools/resolve.
func New(s *mcp.Server, rs *resolve.Server, resolver resolve.Resolver, logger *slog.Logger) *Mirror {
	return &Mirror{server: s, rs: rs, resolver: resolver, logger: logger,
		tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
}

// Synced is what [Mirror.Sync] registered of a view: the items that may be
// served, and why the others were refused.
type Synced struct {
	Tools     []*catalog.Tool
	Resources []*catalog.Resource
	Templates []*catalog.Template
	Problems  []catalog.Problem
}

// Sync registers v's items that are new or changed, and removes the
// registered items that v no longer has. A tool the SDK refuses is removed
// from v too (it cannot be called); every refusal is a problem.
func (m *Mirror) Sync(v *catalog.View) Synced {
	var out Synced
	want := map[string]bool{}
	for _, t := range append([]*catalog.Tool(nil), v.Tools...) {
		if err := m.tool(t); err != nil {
			out.Problems = append(out.Problems, catalog.Problem{Upstream: t.Upstream, Kind: "tool", Name: t.Name, Reason: err.Error()})
			v.RemoveTool(t.Exposed)
			continue
		}
		want[t.Exposed] = true
		out.Tools = append(out.Tools, t)
	}
	if drop := prune(m.tools, want); len(drop) > 0 {
		m.rs.RemoveTools(drop...)
	}

	want = map[string]bool{}
	for _, p := range v.Prompts {
		m.prompt(p)
		want[p.Exposed] = true
	}
	if drop := prune(m.prompts, want); len(drop) > 0 {
		m.server.RemovePrompts(drop...)
	}

	want = map[string]bool{}
	for _, r := range v.Resources {
		if err := m.resource(r); err != nil {
			out.Problems = append(out.Problems, catalog.Problem{Upstream: r.Upstream, Kind: "resource", Name: r.URI, Reason: err.Error()})
			continue
		}
		want[r.Exposed] = true
		out.Resources = append(out.Resources, r)
	}
	if drop := prune(m.resources, want); len(drop) > 0 {
		m.server.RemoveResources(drop...)
	}

	want = map[string]bool{}
	for _, t := range v.Templates {
		if err := m.template(t); err != nil {
			out.Problems = append(out.Problems, catalog.Problem{Upstream: t.Upstream, Kind: "template", Name: t.URITemplate, Reason: err.Error()})
			continue
		}
		want[t.Exposed] = true
		out.Templates = append(out.Templates, t)
	}
	if drop := prune(m.templates, want); len(drop) > 0 {
		m.server.RemoveResourceTemplates(drop...)
	}
	return out
}

// prune deletes from registered the names that want has not, and returns
// them.
func prune(registered map[string]string, want map[string]bool) []string {
	var drop []string
	for name := range registered {
		if !want[name] {
			drop = append(drop, name)
			delete(registered, name)
		}
	}
	return drop
}

// Announce makes the SDK server send list_changed for kinds, by adding and
// removing a placeholder that no client sees (lists and calls are served
// from the gateway's own catalog, not the SDK's registry).
func (m *Mirror) Announce(kinds upstream.ListKinds) {
	const name = "preflight.gateway.list-changed"
	const uri = "preflight-gateway:list-changed"
	if kinds&upstream.ListTools != 0 && m.tools[name] == "" {
		m.server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, unreachableTool)
		m.server.RemoveTools(name)
	}
	if kinds&upstream.ListPrompts != 0 && m.prompts[name] == "" {
		m.server.AddPrompt(&mcp.Prompt{Name: name}, unreachablePrompt)
		m.server.RemovePrompts(name)
	}
	if kinds&upstream.ListResources != 0 && m.resources[uri] == "" {
		m.server.AddResource(&mcp.Resource{URI: uri, Name: name}, unreachableResource)
		m.server.RemoveResources(uri)
	}
}

// tool registers t with the SDK server (through package resolve) if it is
// new or changed.
func (m *Mirror) tool(t *catalog.Tool) (err error) {
	key := t.Upstream + "\x00" + string(t.Raw)
	if m.tools[t.Exposed] == key {
		return nil
	}
	if t.Tool == nil {
		return errors.New("no decoded definition")
	}
	if !objectSchema(t.Tool.InputSchema) {
		return errors.New(`input schema is not {"type": "object", ...}`)
	}
	tt := *t.Tool
	tt.Name = t.Exposed
	tt.Meta = validHints(tt.Meta)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("refused by the SDK: %v", p)
		}
	}()
	if err := tryAdd(func() { m.rs.AddTool(&tt, unreachableTool, m.resolver) }); err != nil {
		// Package resolve could not compile the input schema for argument
		// validation: resolve this tool without validating arguments.
		tt.InputSchema = json.RawMessage(`{"type":"object"}`)
		m.rs.AddTool(&tt, unreachableTool, m.resolver)
		m.logger.Warn("tools/resolve will not validate the arguments of this tool", "server", t.Upstream, "tool", t.Name, "reason", err)
	}
	m.tools[t.Exposed] = key
	return nil
}

// prompt registers p if it is new or changed.
func (m *Mirror) prompt(p *catalog.Prompt) {
	key := p.Upstream + "\x00" + string(p.Raw)
	if m.prompts[p.Exposed] == key {
		return
	}
	pp := *p.Prompt
	pp.Name = p.Exposed
	m.server.AddPrompt(&pp, unreachablePrompt)
	m.prompts[p.Exposed] = key
}

// resource registers r under the URI clients see if it is new or changed.
func (m *Mirror) resource(r *catalog.Resource) error {
	key := r.Upstream + "\x00" + string(r.Raw)
	if m.resources[r.Exposed] == key {
		return nil
	}
	if _, err := url.Parse(r.Exposed); err != nil || r.Resource == nil {
		return fmt.Errorf("invalid URI")
	}
	rr := *r.Resource
	rr.URI = r.Exposed
	if err := tryAdd(func() { m.server.AddResource(&rr, unreachableResource) }); err != nil {
		return err
	}
	m.resources[r.Exposed] = key
	return nil
}

// template registers t under the URI template clients see if it is new or
// changed.
func (m *Mirror) template(t *catalog.Template) error {
	key := t.Upstream + "\x00" + string(t.Raw)
	if m.templates[t.Exposed] == key {
		return nil
	}
	if _, err := uritemplate.New(t.Exposed); err != nil || t.Template == nil {
		return fmt.Errorf("invalid URI template")
	}
	tt := *t.Template
	tt.URITemplate = t.Exposed
	if err := tryAdd(func() { m.server.AddResourceTemplate(&tt, unreachableResource) }); err != nil {
		return err
	}
	m.templates[t.Exposed] = key
	return nil
}

// tryAdd runs f, an SDK registration, and returns its panic as an error.
func tryAdd(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// objectSchema reports whether a decoded input schema is an object schema,
// as the SDK server requires.
func objectSchema(s any) bool {
	m, ok := s.(map[string]any)
	return ok && m["type"] == "object"
}

// validHints returns meta without its policy hints if they do not parse
// (package resolve refuses a tool whose hints are invalid; the listing
// clients see is the upstream's, unchanged).
func validHints(meta mcp.Meta) mcp.Meta {
	if _, err := hints.Read(meta); err == nil {
		return meta
	}
	out := mcp.Meta{}
	for k, v := range meta {
		if !strings.HasPrefix(k, "mcp.dev/") {
			out[k] = v
		}
	}
	return out
}

func unreachableTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("unreachable: the gateway serves tools/call itself")
}

func unreachablePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("unreachable: the gateway serves prompts/get itself")
}

func unreachableResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("unreachable: the gateway serves resources/read itself")
}
