package catalog

import (
	"encoding/json"
	"slices"
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
	v := Build([]*Listing{{Upstream: "files", Tools: tools("files", "read", "write")}}, false)
	if got, want := exposed(v), []string{"files:read", "files:write"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if tl, ok := v.Tool("read"); !ok || tl.Name != "read" {
		t.Errorf("Tool(read) = %v, %v", tl, ok)
	}
}

func TestPrefixes(t *testing.T) {
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
	v := Build([]*Listing{
		{Upstream: "a", Resources: []*Resource{{Upstream: "a", URI: "file:///x"}, {Upstream: "a", URI: "test://dup"}},
			Templates: []*Template{{Upstream: "a", URITemplate: "test://template/{id}/data"}}},
		{Upstream: "b", Resources: []*Resource{{Upstream: "b", URI: "test://dup"}},
			Templates: []*Template{{Upstream: "b", URITemplate: "test://{any}"}, {Upstream: "b", URITemplate: "bad://{"}}},
	}, true)
	for uri, want := range map[string]string{
		"file:///x":               "a",
		"test://template/42/data": "a", // a's template comes first
		"test://other":            "b",
		"test://dup":              "b", // no longer listed, but b's template matches
	} {
		if got, ok := v.ResourceUpstream(uri); !ok || got != want {
			t.Errorf("ResourceUpstream(%q) = %q, %v; want %q", uri, got, ok, want)
		}
	}
	if _, ok := v.ResourceUpstream("nope://x"); ok {
		t.Error("an unknown URI routes")
	}
	var kinds []string
	for _, p := range v.Problems {
		kinds = append(kinds, p.Kind+":"+p.Name)
	}
	slices.Sort(kinds)
	if want := []string{"resource:test://dup", "resource:test://dup", "template:bad://{"}; !slices.Equal(kinds, want) {
		t.Errorf("problems = %v, want %v", kinds, want)
	}
}

func TestMerge(t *testing.T) {
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
	for name, ok := range map[string]bool{
		"a": true, "get_issue": true, "a.b-c_D9": true, strings.Repeat("a", 128): true,
		"": false, strings.Repeat("a", 129): false, "a b": false, "é": false, "a/b": false,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
