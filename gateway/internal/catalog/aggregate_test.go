package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func prompts(upstream string, names ...string) []*Prompt {
	var out []*Prompt
	for _, n := range names {
		out = append(out, &Prompt{Upstream: upstream, Name: n, Raw: json.RawMessage(`{"name":"` + n + `"}`)})
	}
	return out
}

// TestPromptsAreNamedLikeTools: prompts get the same prefixes, filters and
// clash rules as tools, independently of them.
func TestPromptsAreNamedLikeTools(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{
		{Upstream: "a", Naming: Naming{Exclude: []string{"secret*"}}, Tools: tools("a", "b__c"), Prompts: prompts("a", "b__c", "greet", "secret_plan", "has space")},
		{Upstream: "a__b", Prompts: prompts("a__b", "c")},
		{Upstream: "m", Naming: Naming{Prefix: "mem", Separator: "-", Include: []string{"g*"}}, Prompts: prompts("m", "greet", "other")},
	}, true)
	var got []string
	for _, p := range v.Prompts {
		got = append(got, p.Upstream+":"+p.Exposed)
	}
	if want := []string{"a:a__greet", "m:mem-greet"}; !slices.Equal(got, want) {
		t.Errorf("prompts = %v, want %v", got, want)
	}
	if p, ok := v.Prompt("mem-greet"); !ok || p.Upstream != "m" || p.Name != "greet" {
		t.Errorf("Prompt(mem-greet) = %+v, %v", p, ok)
	}
	for _, name := range []string{"greet", "a__b__c", "a__secret_plan", "m__greet"} {
		if _, ok := v.Prompt(name); ok {
			t.Errorf("Prompt(%q) routes", name)
		}
	}
	// The tool a__b__c clashes with nothing: prompts and tools are apart.
	if tl, ok := v.Tool("a__b__c"); !ok || tl.Name != "b__c" {
		t.Errorf("Tool(a__b__c) = %+v, %v", tl, ok)
	}
	var problems []string
	for _, p := range v.Problems {
		problems = append(problems, p.Kind+":"+p.Upstream+":"+p.Name)
	}
	slices.Sort(problems)
	if want := []string{"prompt:a:b__c", "prompt:a:has space", "prompt:a__b:c"}; !slices.Equal(problems, want) {
		t.Errorf("problems = %v, want %v", problems, want)
	}
}

// TestExcludeWinsOverInclude: a name both patterns match is hidden, and a
// hidden name is no problem and clashes with nothing.
func TestExcludeWinsOverInclude(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{
		{Upstream: "a", Naming: Naming{Include: []string{"*"}, Exclude: []string{"x"}}, Tools: tools("a", "x", "y")},
		{Upstream: "b", Naming: Naming{Prefix: "a"}, Tools: tools("b", "x")},
	}, true)
	if got, want := exposed(v), []string{"a:a__y", "b:a__x"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if len(v.Problems) != 0 {
		t.Errorf("problems = %v, want none", v.Problems)
	}
}

// TestNamingCheck refuses prefixes outside the name alphabet.
func TestNamingCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n  Naming
		ok bool
	}{
		{Naming{}, true},
		{Naming{Prefix: "gh.v2-x_", Separator: ".", Include: []string{"get_?", "list_*"}, Exclude: []string{"[a-c]*"}}, true},
		{Naming{Prefix: "my server"}, false},
		{Naming{Prefix: "ünï"}, false},
		{Naming{Exclude: []string{"[z-"}}, false},
	} {
		if err := tc.n.Check(); (err == nil) != tc.ok {
			t.Errorf("Check(%+v) = %v, want ok %v", tc.n, err, tc.ok)
		}
	}
}

// TestPrefixedWithOneUpstream: a gateway configured with several upstreams
// prefixes even when only one of them is listed.
func TestPrefixedWithOneUpstream(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{{Upstream: "files", Tools: tools("files", "read")}}, true)
	if got, want := exposed(v), []string{"files:files__read"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
}

// TestBuildMergesCaches: each aggregated list's cache comes from that
// list's parts only.
func TestBuildMergesCaches(t *testing.T) {
	t.Parallel()
	pub := func(ttl int) Cache { return Cache{Listed: true, TTLMs: ttl, Scope: ScopePublic} }
	v := Build([]*Listing{
		{Upstream: "a", ToolsCache: pub(60000), PromptsCache: pub(1000), ResourcesCache: Cache{Listed: true}},
		{Upstream: "b", ToolsCache: pub(5000), TemplatesCache: pub(2000)},
	}, true)
	for _, tc := range []struct {
		name      string
		got, want Cache
	}{
		{"tools", v.ToolsCache, pub(5000)},
		{"prompts", v.PromptsCache, pub(1000)},
		{"resources", v.ResourcesCache, Cache{Listed: true, Scope: ScopePrivate}},
		{"templates", v.TemplatesCache, pub(2000)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s cache = %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}

// TestRemoveTool drops one tool and leaves the view it was built from
// unchanged for anyone holding its Tools slice.
func TestRemoveTool(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{{Upstream: "a", Tools: tools("a", "x", "y", "z")}}, false)
	before := v.Tools
	v.RemoveTool("y")
	v.RemoveTool("nope")
	if got, want := exposed(v), []string{"a:x", "a:z"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if _, ok := v.Tool("y"); ok {
		t.Error("a removed tool still routes")
	}
	if len(before) != 3 || before[1].Name != "y" {
		t.Errorf("the earlier slice changed: %v", before)
	}
}

// TestBuildCopiesItems: Build sets Exposed on copies, never on the
// listing's items, which other views may share.
func TestBuildCopiesItems(t *testing.T) {
	t.Parallel()
	l := &Listing{Upstream: "a", Tools: tools("a", "x"), Resources: []*Resource{{Upstream: "a", URI: "u://1"}}}
	Build([]*Listing{l, {Upstream: "b", Resources: []*Resource{{Upstream: "b", URI: "u://1"}}}}, true)
	if l.Tools[0].Exposed != "" || l.Resources[0].Exposed != "" {
		t.Errorf("Build wrote into the listing: tool %q, resource %q", l.Tools[0].Exposed, l.Resources[0].Exposed)
	}
}

// TestNamespaceEscapesUpstreamNames: an upstream name that is not a path
// segment is escaped in its namespace, and routes back.
func TestNamespaceEscapesUpstreamNames(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{
		{Upstream: "my files/2", Resources: []*Resource{{Upstream: "my files/2", URI: "file:///x"}}},
		{Upstream: "b", Resources: []*Resource{{Upstream: "b", URI: "file:///x"}}},
	}, true)
	want := "preflight:my%20files%2F2/file:///x"
	if v.Resources[0].Exposed != want {
		t.Fatalf("exposed as %q, want %q", v.Resources[0].Exposed, want)
	}
	if up, target, err := v.Resource(want); err != nil || up != "my files/2" || target != "file:///x" {
		t.Errorf("Resource(%q) = %q, %q, %v", want, up, target, err)
	}
	var amb *AmbiguousURIError
	if _, _, err := v.Resource("file:///x"); !errors.As(err, &amb) || !strings.Contains(err.Error(), want) {
		t.Errorf("Resource(file:///x) = %v, want the ambiguity naming %q", err, want)
	}
}

// TestClaimedMatchesPairwise checks the sorted claim of resources and
// templates against its definition, pair by pair, on random catalogs with
// many shared beginnings: an item is namespaced when another upstream
// lists the same URI, when a template of another upstream begins with
// the item's beginning or the item with the template's, and when it
// looks namespaced already; and every resource is read through the form
// it is listed under.
func TestClaimedMatchesPairwise(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		b.WriteString("x:")
		for range r.IntN(4) {
			b.WriteByte("ab/"[r.IntN(3)])
		}
		return b.String()
	}
	for i := range 3000 {
		var listings []*Listing
		for u := range 1 + r.IntN(3) {
			name := fmt.Sprintf("u%d", u)
			l := &Listing{Upstream: name}
			for range r.IntN(4) {
				uri := text()
				if r.IntN(10) == 0 {
					uri = URIScheme + uri
				}
				l.Resources = append(l.Resources, &Resource{Upstream: name, URI: uri})
			}
			for range r.IntN(3) {
				l.Templates = append(l.Templates, &Template{Upstream: name, URITemplate: text() + "{v}"})
			}
			listings = append(listings, l)
		}
		v := Build(listings, true)

		type item struct {
			upstream, text string
			template       bool
			exposed, own   string
		}
		var items []item
		for _, res := range v.Resources {
			items = append(items, item{res.Upstream, res.URI, false, res.Exposed, res.URI})
		}
		for _, tm := range v.Templates {
			items = append(items, item{tm.Upstream, tm.literal, true, tm.Exposed, tm.URITemplate})
		}
		// Every resource is read through the form it is listed under.
		for _, res := range v.Resources {
			if up, target, err := v.Resource(res.Exposed); err != nil || up != res.Upstream || target != res.URI {
				t.Fatalf("catalog %d: Resource(%q) = %q, %q, %v; want %s's %q", i, res.Exposed, up, target, err, res.Upstream, res.URI)
			}
		}
		for _, it := range items {
			claimed := strings.HasPrefix(it.text, URIScheme) || it.template && overlap(it.text, URIScheme)
			for _, o := range items {
				if o.upstream == it.upstream {
					continue
				}
				switch {
				case !it.template && !o.template && o.text == it.text,
					o.template && strings.HasPrefix(it.text, o.text),
					it.template && strings.HasPrefix(o.text, it.text):
					claimed = true
				}
			}
			want := it.own
			if claimed {
				want = NamespacedURI(it.upstream, it.own)
			}
			if it.exposed != want {
				t.Fatalf("catalog %d: %s's %q exposed as %q, want %q\nitems: %+v", i, it.upstream, it.own, it.exposed, want, items)
			}
		}
	}
}
