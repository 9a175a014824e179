package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
)

// catalogDir is testdata/catalogs at the repository root.
func catalogDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "testdata", "catalogs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "github-all.json")); err != nil {
		t.Fatalf("the tool catalogs are not at %s (testdata/catalogs at the repository root): %v", dir, err)
	}
	return dir
}

// readCatalog reads a catalog file's tools. With a prefix, only the tools
// named prefix+"__"+name are kept, under their own name (the LiveMCPBench
// set prefixes each tool with its server).
func readCatalog(t testing.TB, file, prefix string) []*mcp.Tool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(catalogDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if prefix == "" {
		return doc.Tools
	}
	var out []*mcp.Tool
	for _, tool := range doc.Tools {
		if name, ok := strings.CutPrefix(tool.Name, prefix+"__"); ok {
			tool.Name = name
			out = append(out, tool)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no tools of %s", file, prefix)
	}
	return out
}

// catalog is a real catalog and the pack written for its server.
type catalog struct {
	file, prefix, pack string
	// annotated: the capture carries the server's own annotations.
	annotated bool
}

func (c catalog) label() string {
	if c.prefix != "" {
		return c.file + " (" + c.prefix + "__*)"
	}
	return c.file
}

// catalogs are every catalog in testdata/catalogs that a pack is written
// for.
var catalogs = []catalog{
	{file: "github-all.json", pack: "github", annotated: true},
	{file: "github-default.json", pack: "github", annotated: true},
	{file: "server-filesystem.json", pack: "filesystem", annotated: true},
	{file: "server-memory.json", pack: "memory", annotated: true},
	{file: "server-everything.json", pack: "everything", annotated: true},
	{file: "livemcptool.json", prefix: "playwright", pack: "playwright"},
	{file: "livemcptool.json", prefix: "puppeteer", pack: "puppeteer"},
}

// compileFor compiles the pack for one upstream, checked against tools.
func compileFor(t testing.TB, name string, tools []*mcp.Tool) *rules.Rules {
	t.Helper()
	rs, err := Rules(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rules.Compile(rules.Config{Servers: map[string]rules.Server{"up": {Pack: rs}}})
	if err != nil {
		t.Fatalf("pack %s: %v", name, err)
	}
	if err := r.SetTools("up", tools); err != nil {
		t.Fatalf("pack %s against its catalog: %v", name, err)
	}
	return r
}

// variant is one call of a tool in the confirmation mix.
type variant struct {
	label string
	args  map[string]any
}

// variants returns the calls of tool the measurement makes: one per value
// of its switching argument (the enum's values, true and false for a
// boolean, the pack's listed values otherwise), or a single one. Every
// call carries the tool's required arguments, with a neutral placeholder
// of their type.
func variants(t testing.TB, p *Pack, tool *mcp.Tool) []variant {
	t.Helper()
	schema := schemaMap(t, tool)
	props, _ := schema["properties"].(map[string]any)
	base := map[string]any{}
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		prop, _ := props[name].(map[string]any)
		base[name] = placeholder(prop)
	}
	sw := p.Switch(tool.Name)
	values := switchValues(t, p, tool)
	if sw == "" || len(values) == 0 {
		return []variant{{label: "", args: base}}
	}
	out := make([]variant, 0, len(values))
	for _, v := range values {
		args := make(map[string]any, len(base)+1)
		for k, x := range base {
			args[k] = x
		}
		args[sw] = v
		out = append(out, variant{label: fmt.Sprintf("%s=%v", sw, v), args: args})
	}
	return out
}

// switchValues returns the values of tool's switching argument.
func switchValues(t testing.TB, p *Pack, tool *mcp.Tool) []any {
	t.Helper()
	sw := p.Switch(tool.Name)
	if sw == "" {
		return nil
	}
	props, _ := schemaMap(t, tool)["properties"].(map[string]any)
	prop, ok := props[sw].(map[string]any)
	if !ok {
		t.Fatalf("pack %s: tool %s switches on %q, which its schema does not define", p.Name, tool.Name, sw)
	}
	var listed []string
	for _, pt := range p.Tools {
		if pt.Tool == tool.Name {
			listed = pt.Values
		}
	}
	enum, hasEnum := prop["enum"].([]any)
	isBool := prop["type"] == "boolean"
	switch {
	case hasEnum && len(listed) > 0, isBool && len(listed) > 0:
		t.Fatalf("pack %s: tool %s lists values for %q, which the schema already enumerates", p.Name, tool.Name, sw)
	case hasEnum:
		return enum
	case isBool:
		return []any{true, false}
	case len(listed) == 0:
		t.Fatalf("pack %s: tool %s switches on %q, which has no enum and is not a boolean: list its values", p.Name, tool.Name, sw)
	}
	out := make([]any, len(listed))
	for i, v := range listed {
		out[i] = v
	}
	return out
}

func schemaMap(t testing.TB, tool *mcp.Tool) map[string]any {
	t.Helper()
	m, ok := tool.InputSchema.(map[string]any)
	if !ok {
		t.Fatalf("tool %s: input schema is %T", tool.Name, tool.InputSchema)
	}
	return m
}

// placeholder is a neutral value of a property's type.
func placeholder(prop map[string]any) any {
	if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch prop["type"] {
	case "number", "integer":
		return 1.0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

func resolveArgs(t testing.TB, r *rules.Rules, tool *mcp.Tool, args map[string]any) rules.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Resolve(context.Background(), rules.Call{Server: "up", Tool: tool, Arguments: raw}, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", tool.Name, raw, err)
	}
	return res
}

func toolNames(tools []*mcp.Tool) []string {
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	sort.Strings(names)
	return names
}

func findTool(tools []*mcp.Tool, name string) *mcp.Tool {
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == name })
	if i < 0 {
		return nil
	}
	return tools[i]
}
