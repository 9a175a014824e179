package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// page is one page of a list: the raw items and the cursor of the next.
// listAll fetches every page of a list, with each page's raw items, bounded
// by DefaultMaxListPages and DefaultMaxListItems. fetch sends one request;
// field names the array in the result.
func listAll(ctx context.Context, field string, fetch func(ctx context.Context, cursor string) (next string, err error)) ([]json.RawMessage, cacheInfo, error) {
	var (
		items  []json.RawMessage
		cursor string
		first  cacheInfo
	)
	for n := 0; ; n++ {
		if n == DefaultMaxListPages {
			return nil, first, fmt.Errorf("more than %d pages", DefaultMaxListPages)
		}
		sctx, s := withSink(ctx)
		next, err := fetch(sctx, cursor)
		s.done()
		if err != nil {
			return nil, first, err
		}
		raw := s.result()
		if raw == nil {
			return nil, first, fmt.Errorf("no result captured")
		}
		arr, ok, err := rawjson.Get(raw, field)
		if err != nil || !ok {
			return nil, first, fmt.Errorf("result without %q", field)
		}
		if string(arr) == "null" {
			// An empty list some servers send as null (and older
			// gateways did): nothing listed.
			arr = json.RawMessage("[]")
		}
		els, err := rawjson.Elements(arr)
		if err != nil {
			return nil, first, fmt.Errorf("%q: %w", field, err)
		}
		items = append(items, els...)
		if len(items) > DefaultMaxListItems {
			return nil, first, fmt.Errorf("more than %d items", DefaultMaxListItems)
		}
		if n == 0 {
			s.mu.Lock()
			first = s.cache
			s.mu.Unlock()
		}
		if next == "" || next == cursor {
			return items, first, nil
		}
		cursor = next
	}
}

// listCache turns a first page's cache-control into the listing's.
func listCache(c cacheInfo, modern bool) catalog.Cache {
	if !modern {
		return catalog.Cache{Listed: true} // a legacy upstream says nothing
	}
	scope := c.scope
	if scope == "" {
		scope = catalog.ScopePublic // the protocol default
	}
	return catalog.Cache{Listed: true, TTLMs: c.ttlMs, Scope: scope}
}

// nameOf returns the string member key of a raw item.
func nameOf(raw json.RawMessage, key string) string {
	s, _, _ := rawjson.GetString(raw, key)
	return s
}

func listTools(ctx context.Context, cs *mcp.ClientSession, modern bool) ([]*catalog.Tool, catalog.Cache, error) {
	typed := map[string]*mcp.Tool{}
	raws, cache, err := listAll(ctx, "tools", func(ctx context.Context, cursor string) (string, error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, t := range res.Tools {
			typed[t.Name] = t
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, catalog.Cache{}, err
	}
	var out []*catalog.Tool
	for _, raw := range raws {
		name := nameOf(raw, "name")
		t, ok := typed[name]
		if !ok {
			continue // the SDK dropped it (an invalid x-mcp-header), or no name
		}
		out = append(out, &catalog.Tool{Name: name, Raw: raw, Tool: t, Resolvable: resolvable(raw, t)})
	}
	return out, listCache(cache, modern), nil
}

// resolvable reports whether a listed tool says it answers tools/resolve:
// the extension's marker in _meta or the seed's top-level resolve: true.
func resolvable(raw json.RawMessage, t *mcp.Tool) bool {
	if preflight.IsResolvable(t) {
		return true
	}
	v, ok, _ := rawjson.Get(raw, "resolve")
	return ok && string(v) == "true"
}

func listPrompts(ctx context.Context, cs *mcp.ClientSession, modern bool) ([]*catalog.Prompt, catalog.Cache, error) {
	typed := map[string]*mcp.Prompt{}
	raws, cache, err := listAll(ctx, "prompts", func(ctx context.Context, cursor string) (string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, p := range res.Prompts {
			typed[p.Name] = p
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, catalog.Cache{}, err
	}
	var out []*catalog.Prompt
	for _, raw := range raws {
		name := nameOf(raw, "name")
		if p, ok := typed[name]; ok && name != "" {
			out = append(out, &catalog.Prompt{Name: name, Raw: raw, Prompt: p})
		}
	}
	return out, listCache(cache, modern), nil
}

func listResources(ctx context.Context, cs *mcp.ClientSession, modern bool) ([]*catalog.Resource, catalog.Cache, error) {
	typed := map[string]*mcp.Resource{}
	raws, cache, err := listAll(ctx, "resources", func(ctx context.Context, cursor string) (string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, r := range res.Resources {
			typed[r.URI] = r
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, catalog.Cache{}, err
	}
	var out []*catalog.Resource
	for _, raw := range raws {
		uri := nameOf(raw, "uri")
		if r, ok := typed[uri]; ok && uri != "" {
			out = append(out, &catalog.Resource{URI: uri, Raw: raw, Resource: r})
		}
	}
	return out, listCache(cache, modern), nil
}

func listTemplates(ctx context.Context, cs *mcp.ClientSession, modern bool) ([]*catalog.Template, catalog.Cache, error) {
	typed := map[string]*mcp.ResourceTemplate{}
	raws, cache, err := listAll(ctx, "resourceTemplates", func(ctx context.Context, cursor string) (string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, t := range res.ResourceTemplates {
			typed[t.URITemplate] = t
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, catalog.Cache{}, err
	}
	var out []*catalog.Template
	for _, raw := range raws {
		tmpl := nameOf(raw, "uriTemplate")
		if t, ok := typed[tmpl]; ok && tmpl != "" {
			out = append(out, &catalog.Template{URITemplate: tmpl, Raw: raw, Template: t})
		}
	}
	return out, listCache(cache, modern), nil
}
