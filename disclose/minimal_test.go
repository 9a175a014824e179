package disclose_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/hints"
)

func TestShortDescription(t *testing.T) {
	long := "Fetch comprehensive details for a specific biomedical record, including articles, clinical trials, genetic variants, and everything else you might want to know about them"
	for _, c := range []struct{ desc, title, name, want string }{
		{"Read the entire knowledge graph", "", "read_graph", "Read the entire knowledge graph"},
		{"不知道吃什么？根据人数直接推荐适合的菜品组合", "", "whatToEat", "根据人数直接推荐适合的菜品组合"},
		{"Not sure what to eat? Suggests dishes for the number of people. More text.", "", "", "Suggests dishes for the number of people."},
		{"Read a file. DEPRECATED: use read_text_file.", "", "", "Read a file."},
		{"Echoes back the input string.\n\nUseful for testing.", "", "", "Echoes back the input string."},
		{"\n    Get usage statistics for debugging and analysis.\n    Returns summary.", "", "", "Get usage statistics for debugging and analysis."},
		{"Create and/or submit, delete review of a pull request.\n\nAvailable methods:\n- create", "", "", "Create and/or submit, delete review of a pull request."},
		{"Perform write operations:\n- create\n- delete", "", "", "Perform write operations"},
		{"Search files, e.g. logs. Fast.", "", "", "Search files, e.g. logs."},
		{"Bump to v1.2 of the API. Then stop.", "", "", "Bump to v1.2 of the API."},
		{"# Weather\nGet the weather for a city", "", "", "Weather Get the weather for a city"},
		{"查询12306中转余票信息。更多", "", "", "查询12306中转余票信息。"},
		{long, "", "", "Fetch comprehensive details for a specific biomedical record, including articles, clinical trials, genetic variants…"},
		{"", "Manage files", "manage_files", "Manage files"},
		{"  ", "", "manage_files", "Manage files"},
		{"", "", "getUserInfo", "Get user info"},
		{"", "", "github__list_issues", "Github list issues"},
		{"", "", "", "Tool"},
	} {
		got := disclose.ShortDescription(c.desc, c.title, c.name)
		if got != c.want {
			t.Errorf("ShortDescription(%q, %q, %q)\n got %q\nwant %q", c.desc, c.title, c.name, got, c.want)
		}
		if utf8.RuneCountInString(got) > disclose.ShortDescriptionLimit {
			t.Errorf("%q is longer than the limit", got)
		}
	}
}

func TestMinimal(t *testing.T) {
	schema, err := jsonschema.For[GetDataArgs](nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{
		Name:         "get_data",
		Title:        "Get data",
		Description:  getDataDescription,
		InputSchema:  schema,
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:         mcp.Meta{disclose.MetaShortDescription: "Get data, filtered.", "mcp.dev/effect": "read"},
	}
	before, _ := json.Marshal(tool)

	open := disclose.Minimal(tool, disclose.SchemaOpen)
	if open.Description != "Get data, filtered." || open.Title != "Get data" || !open.Annotations.ReadOnlyHint {
		t.Errorf("open: %+v", open)
	}
	if !reflect.DeepEqual(open.InputSchema, disclose.OpenSchema()) || open.OutputSchema != nil {
		t.Errorf("open schemas: %v %v", open.InputSchema, open.OutputSchema)
	}
	if _, ok := open.Meta[disclose.MetaShortDescription]; ok || open.Meta["mcp.dev/effect"] != "read" {
		t.Errorf("open _meta: %v", open.Meta)
	}

	top := disclose.Minimal(tool, disclose.SchemaTopLevel)
	b, _ := json.Marshal(top.InputSchema)
	if string(b) != `{"additionalProperties":true,"properties":{"limit":{"type":"integer"},"query":{"type":"string"},"sort":{"type":"string"}},"type":"object"}` {
		t.Errorf("top-level schema %s", b)
	}

	if obj := disclose.Minimal(tool, disclose.SchemaObject); !reflect.DeepEqual(obj.InputSchema, map[string]any{"type": "object"}) || obj.OutputSchema != nil {
		t.Errorf("object schemas: %v %v", obj.InputSchema, obj.OutputSchema)
	}

	full := disclose.Minimal(tool, disclose.SchemaFull)
	if full.InputSchema != tool.InputSchema || full.OutputSchema == nil || full.Description != "Get data, filtered." {
		t.Errorf("full: %+v", full)
	}

	// The tool itself is untouched; the copy's annotations are its own.
	open.Annotations.ReadOnlyHint = false
	if after, _ := json.Marshal(tool); string(after) != string(before) {
		t.Errorf("Minimal modified its argument:\n%s\n%s", before, after)
	}
	if disclose.Minimal(nil, disclose.SchemaOpen) != nil || disclose.Full(nil, nil) != nil {
		t.Error("nil tool")
	}

	for _, l := range []disclose.SchemaLevel{disclose.SchemaOpen, disclose.SchemaTopLevel, disclose.SchemaFull, disclose.SchemaObject} {
		if p, ok := disclose.ParseSchemaLevel(l.String()); !ok || p != l {
			t.Errorf("ParseSchemaLevel(%q) = %v, %v", l.String(), p, ok)
		}
	}
	if _, ok := disclose.ParseSchemaLevel("nested"); ok {
		t.Error("ParseSchemaLevel accepted nested")
	}
}

func TestFull(t *testing.T) {
	tool := &mcp.Tool{
		Name:        "echo",
		Description: "Echoes.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"m":{"type":"string"}}}`),
	}
	got := disclose.Full(tool, nil)
	b, _ := json.Marshal(got)
	if string(b) != `{"description":"Echoes.","inputSchema":{"properties":{"m":{"type":"string"}},"type":"object"},"name":"echo"}` {
		t.Errorf("Full without details: %s", b)
	}
	got = disclose.Full(tool, &disclose.Details{
		Description:   "Echoes the message back, unchanged.",
		InputSchema:   json.RawMessage(`{"type":"object","properties":{"m":{"type":"string","description":"the message"}}}`),
		Examples:      []disclose.Example{{Description: "hi", Input: map[string]any{"m": "hi"}, Output: "hi"}},
		UsageGuidance: "Short strings only.",
		ErrorGuidance: map[string]any{"EMPTY": "m is empty"},
	})
	b, _ = json.Marshal(got)
	want := `{"description":"Echoes the message back, unchanged.","error_guidance":{"EMPTY":"m is empty"},"examples":[{"description":"hi","input":{"m":"hi"},"output":"hi"}],"inputSchema":{"properties":{"m":{"description":"the message","type":"string"}},"type":"object"},"name":"echo","usage_guidance":"Short strings only."}`
	if string(b) != want {
		t.Errorf("Full with details:\n got %s\nwant %s", b, want)
	}
}

// catalogTools loads a real catalog from testdata.
func catalogTools(t testing.TB, name string) []*mcp.Tool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Tools
}

// TestMinimalOnRealCatalog: every one of the 527 LiveMCPBench tools gets a
// non-empty short description within the bound, and its minimal entry is
// much smaller than its full one.
func TestMinimalOnRealCatalog(t *testing.T) {
	tools := catalogTools(t, "livemcptool.json")
	if len(tools) != 527 {
		t.Fatalf("%d tools", len(tools))
	}
	seen := func(tl *mcp.Tool) []byte {
		b, _ := json.Marshal(map[string]any{"name": tl.Name, "title": tl.Title, "description": tl.Description, "inputSchema": tl.InputSchema, "annotations": tl.Annotations})
		return b
	}
	var full, minimal int
	for _, tl := range tools {
		m := disclose.Minimal(tl, disclose.SchemaOpen)
		if strings.TrimSpace(m.Description) == "" || utf8.RuneCountInString(m.Description) > disclose.ShortDescriptionLimit {
			t.Errorf("%s: short description %q", tl.Name, m.Description)
		}
		if tl.Description != "" && !strings.Contains(strings.Join(strings.Fields(tl.Description), " "), strings.TrimSuffix(strings.TrimLeft(m.Description, "# "), "…")) {
			t.Errorf("%s: %q is not taken from its description", tl.Name, m.Description)
		}
		full += len(seen(tl))
		minimal += len(seen(m))
	}
	t.Logf("livemcptool: %d bytes listed in full, %d minimal (%.1f%% less)", full, minimal, 100-100*float64(minimal)/float64(full))
	if minimal*3 > full {
		t.Errorf("minimal listing %d bytes is more than a third of the full %d", minimal, full)
	}
}

// TestMemoryStoreExpiry: a scope expires TTL after its last grant, and
// expired scopes are swept, on the store's clock.
func TestMemoryStoreExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	s := disclose.NewMemoryStore(&disclose.MemoryOptions{Now: func() time.Time { return now }})
	ctx := context.Background()
	if err := s.Grant(ctx, "a", map[string]string{"echo": "v1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Lookup(ctx, "a", "echo"); !ok || v != "v1" {
		t.Fatalf("lookup %q %v", v, ok)
	}
	if _, ok, _ := s.Lookup(ctx, "b", "echo"); ok {
		t.Fatal("scope b sees a's grant")
	}
	now = now.Add(50 * time.Minute)
	_ = s.Grant(ctx, "a", map[string]string{"get_data": "v2"}, time.Hour) // extends a
	now = now.Add(50 * time.Minute)
	if v, ok, _ := s.Lookup(ctx, "a", "echo"); !ok || v != "v1" {
		t.Fatalf("after extension: %q %v", v, ok)
	}
	now = now.Add(11 * time.Minute)
	if _, ok, _ := s.Lookup(ctx, "a", "get_data"); ok {
		t.Fatal("expired scope still granted")
	}
	_ = s.Grant(ctx, "c", map[string]string{"echo": "v1"}, time.Hour) // sweeps a
	if s.Len() != 1 {
		t.Errorf("%d scopes after the sweep, want 1", s.Len())
	}
	// A new grant to an expired scope starts afresh.
	now = now.Add(2 * time.Hour)
	_ = s.Grant(ctx, "c", map[string]string{"get_data": "v2"}, time.Hour)
	if _, ok, _ := s.Lookup(ctx, "c", "echo"); ok {
		t.Error("expired grant revived")
	}
	if err := s.Forget(ctx, "c"); err != nil || s.Len() != 0 {
		t.Errorf("forget: %v, %d scopes", err, s.Len())
	}
}

func newEchoTool() *mcp.Tool {
	return &mcp.Tool{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

// TestMinimalAnnotations checks all sixteen combinations of the four
// annotations: the minimal form sets only values that differ from the
// protocol's defaults, a read-only tool sets readOnlyHint alone (and
// openWorldHint false in a closed world), and a client reading the minimal
// form with the defaults decides everything as it would from the full
// form: the hints derived (confirmation, retry, effect) and which
// resolutions exceed the static bounds.
func TestMinimalAnnotations(t *testing.T) {
	all := func(yield func(preflight.Annotations) bool) {
		for i := range 16 {
			a := preflight.Annotations{ReadOnlyHint: i&1 != 0, DestructiveHint: i&2 != 0, IdempotentHint: i&4 != 0, OpenWorldHint: i&8 != 0}
			if !yield(a) {
				return
			}
		}
	}
	for a := range all {
		m := disclose.MinimalAnnotations(a)
		if a == preflight.DefaultAnnotations {
			if m != nil {
				t.Errorf("defaults: %+v, want nil", m)
			}
			continue
		}
		set := map[string]bool{}
		if m.ReadOnlyHint {
			set["readOnlyHint"] = true
		}
		if m.DestructiveHint != nil {
			set["destructiveHint"] = *m.DestructiveHint
		}
		if m.IdempotentHint {
			set["idempotentHint"] = true
		}
		if m.OpenWorldHint != nil {
			set["openWorldHint"] = *m.OpenWorldHint
		}
		def := map[string]bool{"destructiveHint": true, "openWorldHint": true}
		for k, v := range set {
			if v == def[k] {
				t.Errorf("%+v: %s restates the default %v", a, k, v)
			}
		}
		if a.ReadOnlyHint && (m.DestructiveHint != nil || m.IdempotentHint) {
			t.Errorf("read-only %+v: %+v, want readOnlyHint alone", a, m)
		}
		got := preflight.AnnotationsOf(m)
		if !reflect.DeepEqual(hints.Derive(got), hints.Derive(a)) {
			t.Errorf("%+v: derived hints %+v, want %+v", a, hints.Derive(got), hints.Derive(a))
		}
		for r := range all {
			exceeds := func(static preflight.Annotations) []hints.Excess {
				return hints.Exceeds(hints.Declaration{Annotations: static}, hints.Declaration{Annotations: r})
			}
			if (len(exceeds(got)) == 0) != (len(exceeds(a)) == 0) {
				t.Errorf("static %+v (minimal %+v): resolution %+v exceeds %v, want %v", a, m, r, exceeds(got), exceeds(a))
			}
		}
	}
	// A write that destroys nothing keeps destructiveHint false explicitly.
	if m := disclose.MinimalAnnotations(preflight.Annotations{OpenWorldHint: true}); m == nil || m.DestructiveHint == nil || *m.DestructiveHint || m.OpenWorldHint != nil {
		t.Errorf("non-destructive write: %+v", m)
	}
	// Minimal drops the annotation title and the values a read-only tool
	// does not need; on the wire the Go SDK still writes idempotentHint.
	tool := &mcp.Tool{Name: "t", Annotations: &mcp.ToolAnnotations{Title: "T", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: new(bool), OpenWorldHint: new(bool)}}
	if b, _ := json.Marshal(disclose.Minimal(tool, disclose.SchemaObject).Annotations); string(b) != `{"idempotentHint":false,"openWorldHint":false,"readOnlyHint":true}` {
		t.Errorf("Minimal annotations: %s", b)
	}
	// Annotations that restate every default go whole.
	yes := true
	tool.Annotations = &mcp.ToolAnnotations{Title: "T", DestructiveHint: &yes, OpenWorldHint: &yes}
	if m := disclose.Minimal(tool, disclose.SchemaObject); m.Annotations != nil {
		t.Errorf("defaults listed: %+v", m.Annotations)
	}
}
