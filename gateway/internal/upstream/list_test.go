package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
)

// pages is an upstream's list in pages: fetch answers the page a cursor
// names, as the transport would, by filling the request's sink.
type pages struct {
	bodies  []string // raw results, by page
	fetched int
}

func (p *pages) fetch(ctx context.Context, cursor string) (string, error) {
	i := 0
	if cursor != "" {
		i, _ = strconv.Atoi(cursor)
	}
	p.fetched++
	if i >= len(p.bodies) {
		return "", errors.New("no such page")
	}
	if s, ok := ctx.Value(sinkKey{}).(*sink); ok && p.bodies[i] != "" {
		s.set([]byte(p.bodies[i]), nil)
		s.mu.Lock()
		s.cache = cacheInfo{seen: true, ttlMs: 1000 * (i + 1), scope: "public"}
		s.mu.Unlock()
	}
	if i+1 < len(p.bodies) {
		return strconv.Itoa(i + 1), nil
	}
	return "", nil
}

func page(items ...string) string { return `{"tools":[` + strings.Join(items, ",") + `]}` }

// TestListAll: every page is fetched and its items kept raw and in order;
// the first page's cache-control stands for the list; the bounds of pages
// and items and malformed pages are errors.
func TestListAll(t *testing.T) {
	t.Parallel()
	p := &pages{bodies: []string{page(`{"name":"a","n":1.50}`), `{"tools":null}`, page(`{"name":"b"}`, `{"name":"c"}`)}}
	items, cache, err := listAll(t.Context(), "tools", p.fetch)
	if err != nil || p.fetched != 3 {
		t.Fatalf("listAll = %v after %d pages", err, p.fetched)
	}
	var got []string
	for _, it := range items {
		got = append(got, string(it))
	}
	if want := `{"name":"a","n":1.50}|{"name":"b"}|{"name":"c"}`; strings.Join(got, "|") != want {
		t.Errorf("items %s, want %s", strings.Join(got, "|"), want)
	}
	if cache.ttlMs != 1000 {
		t.Errorf("cache %+v, want the first page's", cache)
	}
	if listCache(cache, true) != (catalog.Cache{Listed: true, TTLMs: 1000, Scope: catalog.ScopePublic}) || listCache(cache, false) != (catalog.Cache{Listed: true}) {
		t.Errorf("listCache of %+v: modern %+v, legacy %+v", cache, listCache(cache, true), listCache(cache, false))
	}

	// A cursor the upstream gives again ends the list, not a loop.
	calls := 0
	same := func(ctx context.Context, cursor string) (string, error) {
		calls++
		_, err := p.fetch(ctx, "")
		return "again", err
	}
	if items, _, err := listAll(t.Context(), "tools", same); err != nil || len(items) != 2 || calls != 2 {
		t.Errorf("a repeated cursor: %d items after %d pages, %v; want 2 after 2", len(items), calls, err)
	}

	many := make([]string, DefaultMaxListPages+1)
	for i := range many {
		many[i] = page()
	}
	tooMany := make([]string, DefaultMaxListItems/2+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"name":"t%d"}`, i)
	}
	for _, tc := range []struct {
		name   string
		bodies []string
		want   string
	}{
		{"too many pages", many, fmt.Sprintf("more than %d pages", DefaultMaxListPages)},
		{"too many items", []string{page(tooMany...), page(tooMany...)}, fmt.Sprintf("more than %d items", DefaultMaxListItems)},
		{"nothing captured", []string{""}, "no result captured"},
		{"no such member", []string{`{"prompts":[]}`}, `result without "tools"`},
		{"not an array", []string{`{"tools":{}}`}, `"tools"`},
	} {
		_, _, err := listAll(t.Context(), "tools", (&pages{bodies: tc.bodies}).fetch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := listAll(t.Context(), "tools", func(context.Context, string) (string, error) { return "", errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Errorf("a failed fetch: %v", err)
	}
}

// TestResolvable: a tool is resolvable by the extension's marker or the
// seed's top-level resolve: true, and by nothing else.
func TestResolvable(t *testing.T) {
	t.Parallel()
	marked := &mcp.Tool{Name: "a", Meta: mcp.Meta{preflight.ExtensionToolResolution: map[string]any{"resolvable": true}}}
	for _, tc := range []struct {
		raw  string
		tool *mcp.Tool
		want bool
	}{
		{`{"name":"a","resolve":true}`, nil, true},
		{`{"name":"a"}`, marked, true},
		{`{"name":"a","resolve":"true"}`, nil, false},
		{`{"name":"a","resolve":false}`, nil, false},
		{`{"name":"a"}`, &mcp.Tool{Name: "a"}, false},
	} {
		if got := resolvable(json.RawMessage(tc.raw), tc.tool); got != tc.want {
			t.Errorf("resolvable(%s, %+v) = %v, want %v", tc.raw, tc.tool, got, tc.want)
		}
	}
}
