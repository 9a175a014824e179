package disclose_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/disclose"
)

// The eight conformance criteria of seed 004 section 9, on the wire, in
// both protocol eras: legacy clients are isolated by session, 2026-07-28
// clients by authenticated principal.

func forEachEra(t *testing.T, f func(t *testing.T, url, era string)) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s, _ := newMCPServer(t, nil)
			f(t, serve(t, s), era)
		})
	}
}

// Criterion 1: minimal tool descriptions are provided via tools/list.
func TestCriterion1MinimalToolsList(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		r := p.Call(t, "tools/list", nil)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		byName := map[string]map[string]any{}
		for _, tl := range r.Result["tools"].([]any) {
			m := tl.(map[string]any)
			byName[m["name"].(string)] = m
		}
		open := map[string]any{"type": "object"} // the default, SchemaObject
		for name, wantDesc := range map[string]string{
			"get_data": "Retrieves data from the system with comprehensive filtering, sorting, and pagination capabilities.",
			"echo":     "Echoes back the input string.",
		} {
			tl := byName[name]
			if tl == nil {
				t.Fatalf("%s not listed: %s", name, r.Raw)
			}
			if tl["description"] != wantDesc {
				t.Errorf("%s: description %q, want %q", name, tl["description"], wantDesc)
			}
			if !reflect.DeepEqual(tl["inputSchema"], open) {
				t.Errorf("%s: inputSchema %v, want %v", name, tl["inputSchema"], open)
			}
			if _, ok := tl["outputSchema"]; ok {
				t.Errorf("%s: minimal entry has an outputSchema", name)
			}
		}
		// Hints and _meta survive (a client's confirmation policy still
		// works on the minimal listing); the annotation title does not.
		gd := byName["get_data"]
		if ann, _ := gd["annotations"].(map[string]any); ann["readOnlyHint"] != true || ann["title"] != nil {
			t.Errorf("get_data annotations lost: %v", gd["annotations"])
		}
		if meta, _ := gd["_meta"].(map[string]any); meta["mcp.dev/effect"] != "read" {
			t.Errorf("get_data _meta lost: %v", gd["_meta"])
		}
		for _, banned := range []string{"examples", "Maximum number of results", "pagination capabilities. Use"} {
			if strings.Contains(string(r.Raw), banned) {
				t.Errorf("tools/list contains %q", banned)
			}
		}
	})
}

// Criterion 2: a tool_descriptions resource is exposed via resources/list,
// with a name that says so, a workflow description and application/json.
func TestCriterion2ResourceListed(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		r := p.Call(t, "resources/list", nil)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		var found map[string]any
		for _, res := range r.Result["resources"].([]any) {
			if m := res.(map[string]any); m["uri"] == disclose.DefaultURI {
				found = m
			}
		}
		if found == nil {
			t.Fatalf("resources/list lacks %s: %s", disclose.DefaultURI, r.Raw)
		}
		if found["name"] != "Tool Descriptions - Required for tool use" || found["mimeType"] != "application/json" {
			t.Errorf("resource name %v, mimeType %v", found["name"], found["mimeType"])
		}
		desc, _ := found["description"].(string)
		for _, want := range []string{
			"tools/list",     // relation to the listing
			"before calling", // the requirement
			disclose.DefaultURI + "?tools=tool1,tool2", // query syntax, concrete
			"TOOL_DESCRIPTION_REQUIRED",                // consequence
			"authorizes",                               // fetching authorizes
			"Step 1", "Step 2", "Step 3",               // sequential steps
			"MISSING_TOOL_SELECTION",
		} {
			if !strings.Contains(desc, want) {
				t.Errorf("resource description lacks %q: %s", want, desc)
			}
		}
		if meta, _ := found["_meta"].(map[string]any); meta[disclose.MetaVersion] == nil {
			t.Errorf("resource has no version in _meta: %v", found["_meta"])
		}
		// The query is also advertised as a template.
		rt := p.Call(t, "resources/templates/list", nil)
		if rt.Error != nil || !strings.Contains(string(rt.Raw), disclose.DefaultURI+"{?tools}") {
			t.Errorf("resources/templates/list: %s", rt.Raw)
		}
	})
}

// Criterion 3: the resource accepts a tools query parameter, one name or
// several comma-separated, and returns exactly those.
func TestCriterion3ToolsQueryParameter(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		for uri, want := range map[string][]string{
			disclose.DefaultURI + "?tools=echo":                {"echo"},
			disclose.DefaultURI + "?tools=get_data,echo":       {"echo", "get_data"},
			disclose.DefaultURI + "?tools=echo&tools=get_data": {"echo", "get_data"},
			disclose.DefaultURI + "?tools=echo,echo,%20echo":   {"echo"},
		} {
			m, meta := readMap(t, p, uri)
			var got []string
			for k := range m {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: tools %v, want %v", uri, got, want)
			}
			versions, _ := meta[disclose.MetaToolVersions].(map[string]any)
			if len(versions) != len(want) {
				t.Errorf("%s: versions %v", uri, versions)
			}
		}
	})
}

// Criterion 4: the resource returns full descriptions: the complete
// schema, examples and guidance; an unknown name gets an entry with
// available_tools.
func TestCriterion4FullDescriptions(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		m, _ := readMap(t, p, disclose.DefaultURI+"?tools=get_data,nope")
		gd := m["get_data"].(map[string]any)
		if gd["name"] != "get_data" || gd["description"] != getDataDescription {
			t.Errorf("get_data: name %v, description %v", gd["name"], gd["description"])
		}
		props := gd["inputSchema"].(map[string]any)["properties"].(map[string]any)
		if props["limit"].(map[string]any)["description"] != "Maximum number of results (default: 50, max: 500)" {
			t.Errorf("inputSchema is not the complete schema: %v", gd["inputSchema"])
		}
		if ex := gd["examples"].([]any); len(ex) != 2 || ex[0].(map[string]any)["description"] != "Basic query" {
			t.Errorf("examples: %v", gd["examples"])
		}
		if gd["usage_guidance"] == nil || gd["error_guidance"] == nil {
			t.Errorf("guidance missing: %v", gd)
		}
		nope := m["nope"].(map[string]any)
		if nope["error"] != "Tool 'nope' not found" {
			t.Errorf("unknown tool entry: %v", nope)
		}
		avail, _ := json.Marshal(nope["available_tools"])
		if string(avail) != `["echo","get_data"]` {
			t.Errorf("available_tools %s", avail)
		}
		// Only the selected tools, no preamble.
		if len(m) != 2 {
			t.Errorf("read returned %d entries: %v", len(m), m)
		}
	})
}

// Criterion 5: fetching without the tools parameter returns
// MISSING_TOOL_SELECTION with examples.
func TestCriterion5MissingToolSelection(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		for _, uri := range []string{
			disclose.DefaultURI,
			disclose.DefaultURI + "?tools=",
			disclose.DefaultURI + "?tools=,%20,",
			disclose.DefaultURI + "?other=echo",
		} {
			code, data := rpcErrorData(t, read(t, p, uri))
			if code != disclose.RPCInvalidParams || data["code"] != disclose.CodeMissingToolSelection {
				t.Errorf("%s: code %d, data %v", uri, code, data)
			}
			if data["message"] != "You must specify one or more tool names in the 'tools' parameter." {
				t.Errorf("%s: message %v", uri, data["message"])
			}
			ex, _ := json.Marshal(data["examples"])
			if string(ex) != `["resource:///tool_descriptions?tools=tool_name","resource:///tool_descriptions?tools=tool1,tool2"]` {
				t.Errorf("%s: examples %s", uri, ex)
			}
		}
		// A malformed selection is INVALID_TOOL_SELECTION.
		code, data := rpcErrorData(t, read(t, p, disclose.DefaultURI+"?tools=%zz"))
		if code != disclose.RPCInvalidParams || data["code"] != disclose.CodeInvalidToolSelection {
			t.Errorf("malformed: code %d, data %v", code, data)
		}
	})
}

// Criterion 6: authorization is enforced, and a fetch grants it: the call
// fails before the fetch and succeeds after it, for the fetched tool only.
func TestCriterion6AuthorizationEnforced(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		refusal(t, call(t, p, "echo", map[string]any{"message": "hi"}))
		readMap(t, p, disclose.DefaultURI+"?tools=echo")
		succeeded(t, call(t, p, "echo", map[string]any{"message": "hi"}), "hi")
		succeeded(t, call(t, p, "echo", map[string]any{"message": "again"}), "again") // persists
		refusal(t, call(t, p, "get_data", map[string]any{"query": "q"}))              // not fetched
		// Reading an unknown name alongside authorizes only the known one.
		readMap(t, p, disclose.DefaultURI+"?tools=get_data,nope")
		succeeded(t, call(t, p, "get_data", map[string]any{"query": "q"}), "data for q")
		// A tool the server does not have is the SDK's error, not a refusal.
		if r := call(t, p, "nope", nil); r.Error == nil && r.Result["isError"] != true {
			t.Errorf("unknown tool: %s", r.Raw)
		} else if r.Result != nil {
			if sc, _ := r.Result["structuredContent"].(map[string]any); sc != nil {
				t.Errorf("unknown tool answered with %v", sc)
			}
		}
	})
}

// Criterion 7: calling a tool without fetching returns
// TOOL_DESCRIPTION_REQUIRED with the resource URI.
func TestCriterion7ToolDescriptionRequired(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		p := peer(t, url, era, "alice")
		r := call(t, p, "get_data", map[string]any{"query": "q"})
		e := refusal(t, r)
		// Under 2026-07-28 every result says resultType, as the SDK's own
		// results do; legacy results do not.
		if want := map[string]any{"2026-07-28": "complete"}[era]; r.Result["resultType"] != want {
			t.Errorf("resultType %v, want %v", r.Result["resultType"], want)
		}
		if rr := read(t, p, disclose.DefaultURI+"?tools=echo"); rr.Result["resultType"] != map[string]any{"2026-07-28": "complete"}[era] || rr.Result["cacheScope"] != "private" {
			t.Errorf("read: resultType %v, cacheScope %v", rr.Result["resultType"], rr.Result["cacheScope"])
		}
		want := map[string]any{
			"code":         "TOOL_DESCRIPTION_REQUIRED",
			"message":      "Tool 'get_data' requires fetching its description before use.",
			"resource_uri": "resource:///tool_descriptions?tools=get_data",
			"tool":         "get_data",
		}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("refusal %v, want %v", e, want)
		}
		// The URI it names is the one that works.
		readMap(t, p, e["resource_uri"].(string))
		succeeded(t, call(t, p, "get_data", map[string]any{"query": "q"}), "data for q")
	})
}

// Criterion 8: authorization state is isolated: another legacy session, or
// another principal under 2026-07-28, is still refused after a fetch.
func TestCriterion8IsolatedState(t *testing.T) {
	forEachEra(t, func(t *testing.T, url, era string) {
		a := peer(t, url, era, "alice")
		b := peer(t, url, era, "bob")
		readMap(t, a, disclose.DefaultURI+"?tools=echo")
		succeeded(t, call(t, a, "echo", map[string]any{"message": "a"}), "a")
		refusal(t, call(t, b, "echo", map[string]any{"message": "b"}))
		if era == "2025-11-25" {
			// A second session of the same principal is a new session.
			a2 := peer(t, url, era, "alice")
			refusal(t, call(t, a2, "echo", map[string]any{"message": "a2"}))
		} else {
			// The same principal on a new request is the same scope.
			a2 := peer(t, url, era, "alice")
			succeeded(t, call(t, a2, "echo", map[string]any{"message": "a2"}), "a2")
		}
	})
}
