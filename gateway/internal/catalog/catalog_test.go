package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func tools(upstream string, names ...string) []*Tool {
	var out []*Tool
	for _, n := range names {
		out = append(out, &Tool{Upstream: upstream, Name: n, Raw: json.RawMessage(`{"name":"` + n + `"}`)})
	}
	return out
}

func exposed(v *View) []string {
	var out []string
	for _, t := range v.Tools {
		out = append(out, t.Upstream+":"+t.Exposed)
	}
	return out
}

func TestSingleUpstreamKeepsNames(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{{Upstream: "files", Tools: tools("files", "read", "write")}}, false)
	if got, want := exposed(v), []string{"files:read", "files:write"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if tl, ok := v.Tool("read"); !ok || tl.Name != "read" {
		t.Errorf("Tool(read) = %v, %v", tl, ok)
	}
}

func TestPrefixes(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{
		{Upstream: "files", Tools: tools("files", "read")},
		{Upstream: "mem", Naming: Naming{Prefix: "m", Separator: "."}, Tools: tools("mem", "read")},
	}, true)
	if got, want := exposed(v), []string{"files:files__read", "mem:m.read"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	tl, ok := v.Tool("m.read")
	if !ok || tl.Upstream != "mem" || tl.Name != "read" {
		t.Errorf("Tool(m.read) = %+v, %v", tl, ok)
	}
	if _, ok := v.Tool("read"); ok {
		t.Error("the unprefixed name routes with several upstreams")
	}
}

func TestInvalidAndOverlongNamesAreSkipped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 125) // 125 + "a__" = 128: fits; "ab__" + 125 = 129: does not
	v := Build([]*Listing{
		{Upstream: "a", Tools: tools("a", long, "has space")},
		{Upstream: "ab", Tools: tools("ab", long)},
	}, true)
	if got, want := exposed(v), []string{"a:a__" + long}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if len(v.Problems) != 2 {
		t.Fatalf("problems = %v, want 2", v.Problems)
	}
	if r := v.Problems[0].Reason; !strings.Contains(r, `character ' '`) {
		t.Errorf("problem %q does not name the bad character", r)
	}
	if r := v.Problems[1].Reason; !strings.Contains(r, "129 characters") {
		t.Errorf("problem %q does not say the name is too long", r)
	}
}

func TestClashesSkipEveryClaimant(t *testing.T) {
	t.Parallel()
	// "a" + "__" + "b__c" and "a__b" + "__" + "c" are both "a__b__c".
	v := Build([]*Listing{
		{Upstream: "a", Tools: tools("a", "b__c", "ok")},
		{Upstream: "a__b", Tools: tools("a__b", "c")},
	}, true)
	if got, want := exposed(v), []string{"a:a__ok"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if len(v.Problems) != 2 {
		t.Errorf("problems = %v, want one per claimant", v.Problems)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{{
		Upstream: "gh",
		Naming:   Naming{Include: []string{"get_*", "list_*"}, Exclude: []string{"get_secret*"}},
		Tools:    tools("gh", "get_issue", "get_secret_scanning", "list_repos", "delete_repo"),
	}}, false)
	if got, want := exposed(v), []string{"gh:get_issue", "gh:list_repos"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if err := (Naming{Include: []string{"["}}).Check(); err == nil {
		t.Error("Check accepted a bad pattern")
	}
	if err := (Naming{Separator: "/"}).Check(); err == nil {
		t.Error("Check accepted a separator outside the name alphabet")
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	v := Build([]*Listing{
		{Upstream: "a", Resources: []*Resource{{Upstream: "a", URI: "file:///x"}, {Upstream: "a", URI: "test://dup"}, {Upstream: "a", URI: "file:///x"}, {Upstream: "a", URI: "tie://"}, {Upstream: "a", URI: "own://1"}},
			Templates: []*Template{{Upstream: "a", URITemplate: "test://template/{id}/data"}, {Upstream: "a", URITemplate: "file:///home/{name}"}}},
		{Upstream: "b", Resources: []*Resource{{Upstream: "b", URI: "test://dup"}, {Upstream: "b", URI: "file:///home/secret"}, {Upstream: "b", URI: "preflight:a/file:///x"}},
			Templates: []*Template{{Upstream: "b", URITemplate: "test://{any}"}, {Upstream: "b", URITemplate: "bad://{"}, {Upstream: "b", URITemplate: "mem://{id}"}, {Upstream: "b", URITemplate: "tie://{x}"}}},
		{Upstream: "c", Templates: []*Template{{Upstream: "c", URITemplate: "own://{n}"}, {Upstream: "c", URITemplate: "own://{n}/x"}}},
		{Upstream: "d", Resources: []*Resource{{Upstream: "d", URI: "solo://1"}}, Templates: []*Template{{Upstream: "d", URITemplate: "solo://{n}"}, {Upstream: "d", URITemplate: "solo://{n}/x"}}},
	}, true)
	exposed := map[string]string{}
	for _, r := range v.Resources {
		exposed[r.Upstream+" "+r.URI] = r.Exposed
	}
	for _, tm := range v.Templates {
		exposed[tm.Upstream+" "+tm.URITemplate] = tm.Exposed
	}
	for item, want := range map[string]string{
		"a file:///x":                 "file:///x", // nobody else claims it
		"a test://dup":                "preflight:a/test://dup",
		"b test://dup":                "preflight:b/test://dup",
		"b file:///home/secret":       "preflight:b/file:///home/secret", // a's template matches it
		"a file:///home/{name}":       "preflight:a/file:///home/{name}",
		"b preflight:a/file:///x":     "preflight:b/preflight:a/file:///x",     // looks namespaced
		"a test://template/{id}/data": "preflight:a/test://template/{id}/data", // may overlap b's test://{any}
		"b test://{any}":              "preflight:b/test://{any}",
		"b mem://{id}":                "mem://{id}",
		"a tie://":                    "preflight:a/tie://", // a template's very beginning
		"b tie://{x}":                 "preflight:b/tie://{x}",
		"a own://1":                   "preflight:a/own://1",
		"c own://{n}":                 "preflight:c/own://{n}",
		"c own://{n}/x":               "preflight:c/own://{n}/x", // overlaps a's URI as far as its beginning tells
		"d solo://1":                  "solo://1",                // its own template's match claims nothing
		"d solo://{n}":                "solo://{n}",
		"d solo://{n}/x":              "solo://{n}/x",
	} {
		if got := exposed[item]; got != want {
			t.Errorf("%s exposed as %q, want %q", item, got, want)
		}
	}
	for uri, want := range map[string]string{
		"file:///x":                           "a file:///x",
		"test://template/42/data":             "a test://template/42/data", // b's {any} stops at /
		"test://other":                        "b test://other",
		"mem://7":                             "b mem://7",
		"preflight:a/test://dup":              "a test://dup",
		"preflight:b/test://dup":              "b test://dup",
		"preflight:a/file:///home/secret":     "a file:///home/secret",
		"preflight:b/file:///home/secret":     "b file:///home/secret",
		"preflight:b/preflight:a/file:///x":   "b preflight:a/file:///x",
		"preflight:a/test://template/42/data": "a test://template/42/data",
		"preflight:a/file:///x":               "a file:///x",
	} {
		if up, target, err := v.Resource(uri); err != nil || up+" "+target != want {
			t.Errorf("Resource(%q) = %q, %q, %v; want %s", uri, up, target, err, want)
		}
	}
	for _, uri := range []string{"nope://x", "preflight:b/test://template/42/data", "preflight:a/test://other", "preflight:c/file:///x", "preflight:"} {
		if _, _, err := v.Resource(uri); err != ErrUnknownResource {
			t.Errorf("Resource(%q): %v, want ErrUnknownResource", uri, err)
		}
	}
	for uri, forms := range map[string][]string{
		"test://dup":          {"preflight:a/test://dup", "preflight:b/test://dup"},
		"file:///home/secret": {"preflight:a/file:///home/secret", "preflight:b/file:///home/secret"},
	} {
		_, _, err := v.Resource(uri)
		var amb *AmbiguousURIError
		if !errors.As(err, &amb) || !slices.Equal(amb.Forms, forms) {
			t.Errorf("Resource(%q): %v, want the forms %q", uri, err, forms)
		}
	}
	if got := v.ClientURIs("b", "file:///home/secret"); !slices.Equal(got, []string{"preflight:b/file:///home/secret"}) {
		t.Errorf("ClientURIs of an ambiguous URI = %q", got)
	}
	if got := v.ClientURIs("b", "mem://7"); !slices.Equal(got, []string{"preflight:b/mem://7", "mem://7"}) {
		t.Errorf("ClientURIs of b's own URI = %q", got)
	}
	for pattern, want := range map[string]string{
		"preflight:a/file:///home/{name}": "a",
		"file:///home/{name}":             "a", // only a lists it
		"mem://{id}":                      "b",
		"preflight:b/mem://{id}":          "b",
	} {
		if tm, ok := v.TemplateRef(pattern); !ok || tm.Upstream != want {
			t.Errorf("TemplateRef(%q) = %v, %v; want %s", pattern, tm, ok, want)
		}
	}
	if _, ok := v.TemplateRef("preflight:b/file:///home/{name}"); ok {
		t.Error("a template is found under another upstream's namespace")
	}
	var kinds []string
	for _, p := range v.Problems {
		kinds = append(kinds, p.Kind+":"+p.Upstream+":"+p.Name)
	}
	slices.Sort(kinds)
	if want := []string{"resource:a:file:///x", "template:b:bad://{"}; !slices.Equal(kinds, want) {
		t.Errorf("problems = %v, want %v", kinds, want)
	}

	// With one upstream nothing is renamed or read as namespaced.
	one := Build([]*Listing{{Upstream: "a", Resources: []*Resource{{Upstream: "a", URI: "preflight:a/x"}}}}, false)
	if one.Resources[0].Exposed != "preflight:a/x" {
		t.Errorf("one upstream: exposed as %q", one.Resources[0].Exposed)
	}
	if up, target, err := one.Resource("preflight:a/x"); err != nil || up != "a" || target != "preflight:a/x" {
		t.Errorf("one upstream: Resource = %q, %q, %v", up, target, err)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	pub := func(ttl int) Cache { return Cache{Listed: true, TTLMs: ttl, Scope: ScopePublic} }
	for _, tc := range []struct {
		name  string
		parts []Cache
		want  Cache
	}{
		{"none", nil, Cache{Listed: true, Scope: ScopePrivate}},
		{"public, smallest ttl", []Cache{pub(60000), pub(5000)}, Cache{Listed: true, TTLMs: 5000, Scope: ScopePublic}},
		{"one private", []Cache{pub(60000), {Listed: true, TTLMs: 1000, Scope: ScopePrivate}}, Cache{Listed: true, TTLMs: 1000, Scope: ScopePrivate}},
		{"one without ttl", []Cache{pub(60000), pub(0)}, Cache{Listed: true, TTLMs: 60000, Scope: ScopePrivate}},
		{"a legacy upstream says nothing", []Cache{pub(60000), {Listed: true}}, Cache{Listed: true, TTLMs: 60000, Scope: ScopePrivate}},
		{"unlisted parts do not count", []Cache{pub(30000), {}}, Cache{Listed: true, TTLMs: 30000, Scope: ScopePublic}},
	} {
		if got := Merge(tc.parts...); got != tc.want {
			t.Errorf("%s: Merge = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"a": true, "get_issue": true, "a.b-c_D9": true, strings.Repeat("a", 128): true,
		"": false, strings.Repeat("a", 129): false, "a b": false, "é": false, "a/b": false,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// BenchmarkBuildURIs builds the resources of two upstreams at the list
// bound, one with 10,000 URIs, the other with 10,000 templates whose
// beginnings are not those URIs'.
func BenchmarkBuildURIs(b *testing.B) {
	var rs []*Resource
	var ts []*Template
	for i := range 10000 {
		rs = append(rs, &Resource{Upstream: "a", URI: "file:///dir/" + strconv.Itoa(i) + "/file.txt"})
		ts = append(ts, &Template{Upstream: "b", URITemplate: "file:///dir/" + strconv.Itoa(i) + "x/{p}"})
	}
	listings := []*Listing{{Upstream: "a", Resources: rs}, {Upstream: "b", Templates: ts}}
	for b.Loop() {
		Build(listings, true)
	}
}
