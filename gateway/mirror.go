package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// snapshot is the catalog the gateway serves at one moment, with the raw
// JSON of each listed item ready to send. It is immutable.
type snapshot struct {
	set       *upstreamSet // the upstreams the view was built from
	view      *catalog.View
	version   uint64
	upstreams map[string]*catalog.Listing
	tools     []toolJSON
	prompts   []json.RawMessage
	resources []json.RawMessage
	templates []json.RawMessage
	problems  []catalog.Problem // including items the SDK server refused
}

// toolJSON is a tool as listed to a client that did not declare the
// tool-resolution extension (plain) and to one that did (marked).
type toolJSON struct {
	plain, marked json.RawMessage
}

// mirror remembers what is registered with the SDK server, whose registry
// validates standard headers against each tool's input schema, serves
// tools/resolve through package resolve, and sends list_changed
// notifications when items come and go. Only the rebuild goroutine uses it.
type mirror struct {
	tools, prompts, resources, templates map[string]string
}

// listChanged records that an upstream announced changed lists; the next
// rebuild tells the clients, even if the aggregate looks the same (the
// upstream may have changed and changed back, as a client could have seen).
func (g *Gateway) listChanged(_ *upstream.Conn, kinds upstream.ListKinds) {
	g.listChangedKinds(kinds)
	g.rebuildSoon()
}

// listChangedKinds has the next rebuild announce kinds.
func (g *Gateway) listChangedKinds(kinds upstream.ListKinds) {
	for {
		old := g.announce.Load()
		if g.announce.CompareAndSwap(old, old|uint32(kinds)) {
			break
		}
	}
}

// announceLists makes the SDK server send list_changed for kinds, by adding
// and removing a placeholder that no client sees (lists and calls are
// served from the gateway's own catalog, not the SDK's registry).
func (g *Gateway) announceLists(kinds upstream.ListKinds) {
	const name = "preflight.gateway.list-changed"
	const uri = "preflight-gateway:list-changed"
	if kinds&upstream.ListTools != 0 && g.mirror.tools[name] == "" {
		g.server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, unreachableTool)
		g.server.RemoveTools(name)
	}
	if kinds&upstream.ListPrompts != 0 && g.mirror.prompts[name] == "" {
		g.server.AddPrompt(&mcp.Prompt{Name: name}, unreachablePrompt)
		g.server.RemovePrompts(name)
	}
	if kinds&upstream.ListResources != 0 && g.mirror.resources[uri] == "" {
		g.server.AddResource(&mcp.Resource{URI: uri, Name: name}, unreachableResource)
		g.server.RemoveResources(uri)
	}
}

func (g *Gateway) rebuildSoon() {
	select {
	case g.rebuildC <- struct{}{}:
	default:
	}
}

func (g *Gateway) rebuildLoop(ctx context.Context) {
	g.mirror = mirror{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
	var lastProblems string
	// Quarantined tools are checked again as often as the pinner reads
	// its store, so that an approval releases them.
	var recheck <-chan time.Time
	if g.pins != nil {
		t := time.NewTicker(g.pins.pinner.Refresh())
		defer t.Stop()
		recheck = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.rebuildC:
		case <-recheck:
			if !g.pins.moved(ctx) {
				continue
			}
			g.listChangedKinds(upstream.ListTools)
		}
		snap := g.rebuild(ctx)
		if p := fmt.Sprint(snap.problems); p != lastProblems {
			lastProblems = p
			for _, pr := range snap.problems {
				g.logger.Warn("catalog item skipped", "server", pr.Upstream, "kind", pr.Kind, "name", text.Clip(pr.Name, 200), "reason", pr.Reason)
			}
		}
		g.mu.Lock()
		g.broadcast()
		g.mu.Unlock()
	}
}

// rebuild aggregates the listings of the upstreams that are up, mirrors
// the result into the SDK server and publishes it.
func (g *Gateway) rebuild(ctx context.Context) *snapshot {
	prev := g.state.Load()
	set := g.ups.Load()
	listings := make([]*catalog.Listing, 0, len(set.members))
	used := map[string]*catalog.Listing{}
	rr, _ := g.resolver().(ListingObserver)
	for _, m := range set.members {
		c := m.conn
		if l := c.Listing(); l != nil {
			if rr != nil {
				// The rules are checked against the upstream's tools as
				// soon as it lists them, not at its first call.
				rr.Listed(c.Name(), l, c.ServerInfo())
			}
			used[c.Name()] = l
			if n := set.specs[c.Name()].naming(); !sameNaming(n, l.Naming) {
				// A reload changed how the upstream's names are
				// exposed, which needs no new connection.
				ll := *l
				ll.Naming = n
				l = &ll
			}
			listings = append(listings, l)
		}
	}
	listings, pinProblems := g.pins.listings(ctx, listings)
	v := catalog.Build(listings, set.multi)
	snap := &snapshot{set: set, view: v, version: prev.version + 1, upstreams: used, problems: append(slices.Clone(v.Problems), pinProblems...)}

	// Tools: skip what the SDK server would refuse, then precompute JSON.
	want := map[string]string{}
	for _, t := range slices.Clone(v.Tools) {
		if err := g.syncTool(t); err != nil {
			snap.problems = append(snap.problems, catalog.Problem{Upstream: t.Upstream, Kind: "tool", Name: t.Name, Reason: err.Error()})
			v.RemoveTool(t.Exposed)
			continue
		}
		want[t.Exposed] = t.Upstream + "\x00" + string(t.Raw)
		listing := toolListing(g.asListed(t))
		if g.disclosure.discloses(t.Upstream) {
			listing = g.disclosure.minimalListing(t, listing)
		}
		snap.tools = append(snap.tools, listing)
	}
	var drop []string
	for name := range g.mirror.tools {
		if _, ok := want[name]; !ok {
			drop = append(drop, name)
			delete(g.mirror.tools, name)
		}
	}
	if len(drop) > 0 {
		g.rs.RemoveTools(drop...)
	}

	// Prompts.
	wantP := map[string]bool{}
	for _, p := range v.Prompts {
		key := p.Upstream + "\x00" + string(p.Raw)
		wantP[p.Exposed] = true
		if g.mirror.prompts[p.Exposed] != key {
			pp := *p.Prompt
			pp.Name = p.Exposed
			g.server.AddPrompt(&pp, unreachablePrompt)
			g.mirror.prompts[p.Exposed] = key
		}
		raw := p.Raw
		if p.Exposed != p.Name {
			name, _ := json.Marshal(p.Exposed)
			if r, err := rawjson.Set(raw, "name", name); err == nil {
				raw = r
			}
		}
		snap.prompts = append(snap.prompts, raw)
	}
	drop = drop[:0]
	for name := range g.mirror.prompts {
		if !wantP[name] {
			drop = append(drop, name)
			delete(g.mirror.prompts, name)
		}
	}
	if len(drop) > 0 {
		g.server.RemovePrompts(drop...)
	}

	// Resources and templates, under the URIs clients see.
	wantR := map[string]bool{}
	for _, r := range v.Resources {
		if err := g.syncResource(r); err != nil {
			snap.problems = append(snap.problems, catalog.Problem{Upstream: r.Upstream, Kind: "resource", Name: r.URI, Reason: err.Error()})
			continue
		}
		wantR[r.Exposed] = true
		snap.resources = append(snap.resources, withString(r.Raw, "uri", r.URI, r.Exposed))
	}
	drop = drop[:0]
	for uri := range g.mirror.resources {
		if !wantR[uri] {
			drop = append(drop, uri)
			delete(g.mirror.resources, uri)
		}
	}
	if len(drop) > 0 {
		g.server.RemoveResources(drop...)
	}
	if g.disclosure != nil {
		snap.resources = append(snap.resources, g.disclosure.resource)
	}
	wantT := map[string]bool{}
	for _, t := range v.Templates {
		if err := g.syncTemplate(t); err != nil {
			snap.problems = append(snap.problems, catalog.Problem{Upstream: t.Upstream, Kind: "template", Name: t.URITemplate, Reason: err.Error()})
			continue
		}
		wantT[t.Exposed] = true
		snap.templates = append(snap.templates, withString(t.Raw, "uriTemplate", t.URITemplate, t.Exposed))
	}
	if g.disclosure != nil {
		snap.templates = append(snap.templates, g.disclosure.template)
	}
	drop = drop[:0]
	for tmpl := range g.mirror.templates {
		if !wantT[tmpl] {
			drop = append(drop, tmpl)
			delete(g.mirror.templates, tmpl)
		}
	}
	if len(drop) > 0 {
		g.server.RemoveResourceTemplates(drop...)
	}

	g.state.Store(snap)
	if kinds := upstream.ListKinds(g.announce.Swap(0)); kinds != 0 {
		g.announceLists(kinds)
	}
	return snap
}

// syncTool registers t with the SDK server (through package resolve) if it
// is new or changed.
func (g *Gateway) syncTool(t *catalog.Tool) (err error) {
	key := t.Upstream + "\x00" + string(t.Raw)
	if g.mirror.tools[t.Exposed] == key {
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
	r := g.toolResolver()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("refused by the SDK: %v", p)
		}
	}()
	if err := tryAdd(func() { g.rs.AddTool(&tt, unreachableTool, r) }); err != nil {
		// Package resolve could not compile the input schema for argument
		// validation: resolve this tool without validating arguments.
		tt.InputSchema = json.RawMessage(`{"type":"object"}`)
		g.rs.AddTool(&tt, unreachableTool, r)
		g.logger.Warn("tools/resolve will not validate the arguments of this tool", "server", t.Upstream, "tool", t.Name, "reason", err)
	}
	g.mirror.tools[t.Exposed] = key
	return nil
}

func tryAdd(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

func (g *Gateway) syncResource(r *catalog.Resource) error {
	key := r.Upstream + "\x00" + string(r.Raw)
	if g.mirror.resources[r.Exposed] == key {
		return nil
	}
	if _, err := url.Parse(r.Exposed); err != nil || r.Resource == nil {
		return fmt.Errorf("invalid URI")
	}
	rr := *r.Resource
	rr.URI = r.Exposed
	if err := tryAdd(func() { g.server.AddResource(&rr, unreachableResource) }); err != nil {
		return err
	}
	g.mirror.resources[r.Exposed] = key
	return nil
}

func (g *Gateway) syncTemplate(t *catalog.Template) error {
	key := t.Upstream + "\x00" + string(t.Raw)
	if g.mirror.templates[t.Exposed] == key {
		return nil
	}
	if _, err := uritemplate.New(t.Exposed); err != nil || t.Template == nil {
		return fmt.Errorf("invalid URI template")
	}
	tt := *t.Template
	tt.URITemplate = t.Exposed
	if err := tryAdd(func() { g.server.AddResourceTemplate(&tt, unreachableResource) }); err != nil {
		return err
	}
	g.mirror.templates[t.Exposed] = key
	return nil
}

// withString returns raw with its key set to exposed when that differs
// from the upstream's value.
func withString(raw json.RawMessage, key, upstream, exposed string) json.RawMessage {
	if exposed == upstream {
		return raw
	}
	v, _ := json.Marshal(exposed)
	if r, err := rawjson.Set(raw, key, v); err == nil {
		return r
	}
	return raw
}

// asListed returns t as the gateway lists it: with
// mcp.dev/requiresConfirmation true in its _meta when the gateway asks
// before every call of it (its decisions by default), so that what a
// client or lint reads of the listing is what the gateway does.
func (g *Gateway) asListed(t *catalog.Tool) *catalog.Tool {
	if g.decider == nil || !g.decider.StaticConfirms(t) {
		return t
	}
	if h, err := hints.Read(t.Tool.Meta); err == nil && h.RequiresConfirmation != nil && *h.RequiresConfirmation {
		return t
	}
	meta, ok, err := rawjson.Get(t.Raw, "_meta")
	if err != nil {
		return t
	}
	if !ok || len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage("{}")
	}
	meta, err = rawjson.Set(meta, preflight.MetaRequiresConfirmation, json.RawMessage("true"))
	if err != nil {
		return t
	}
	raw, err := rawjson.Set(t.Raw, "_meta", meta)
	if err != nil {
		return t
	}
	tt := *t
	tt.Raw = raw
	return &tt
}

// toolListing precomputes a tool's JSON for both kinds of tools/list: the
// upstream's bytes with the exposed name, the seed's resolve: true (the
// gateway resolves every tool), and the extension's marker in _meta only
// for clients that declared the extension.
func toolListing(t *catalog.Tool) toolJSON {
	raw := t.Raw
	if t.Exposed != t.Name {
		name, _ := json.Marshal(t.Exposed)
		if r, err := rawjson.Set(raw, "name", name); err == nil {
			raw = r
		}
	}
	if r, err := rawjson.Set(raw, "resolve", json.RawMessage("true")); err == nil {
		raw = r
	}
	meta, hasMeta, _ := rawjson.Get(raw, "_meta")
	var plain, marked json.RawMessage = raw, raw
	marker := json.RawMessage(`{"resolvable":true}`)
	if hasMeta && len(meta) > 0 && meta[0] == '{' {
		if _, had, _ := rawjson.Get(meta, preflight.ExtensionToolResolution); had {
			m, _ := rawjson.Delete(meta, preflight.ExtensionToolResolution)
			if ms, _ := rawjson.Members(m); len(ms) == 0 {
				plain, _ = rawjson.Delete(raw, "_meta")
			} else {
				plain, _ = rawjson.Set(raw, "_meta", m)
			}
		}
		if m, err := rawjson.Set(meta, preflight.ExtensionToolResolution, marker); err == nil {
			marked, _ = rawjson.Set(raw, "_meta", m)
		}
	} else {
		m := rawjson.Object([]rawjson.Member{{Key: preflight.ExtensionToolResolution, Value: marker}})
		marked, _ = rawjson.Set(raw, "_meta", m)
	}
	if plain == nil {
		plain = raw
	}
	if marked == nil {
		marked = raw
	}
	return toolJSON{plain: plain, marked: marked}
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

func unreachableTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("unreachable: the gateway serves tools/call itself")
}

func unreachablePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("unreachable: the gateway serves prompts/get itself")
}

func unreachableResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("unreachable: the gateway serves resources/read itself")
}
