package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseCatalogFormats reads the same two tools in every format a
// catalog may take.
func TestParseCatalogFormats(t *testing.T) {
	const tools = `[
  {"name": "get_a", "description": "Gets a.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
  {"name": "put_b", "inputSchema": {"type": "object"}, "resolve": true}
]`
	for name, doc := range map[string]string{
		"tools/list result": `{"tools": ` + tools + `, "nextCursor": ""}`,
		"testdata shape":    `{"server": {"name": "s", "version": "1"}, "protocolVersion": "2025-11-25", "tools": ` + tools + `}`,
		"JSON-RPC response": `{"jsonrpc": "2.0", "id": 1, "result": {"tools": ` + tools + `}}`,
		"bare array":        tools,
		"byte-order mark":   "\xef\xbb\xbf" + tools,
	} {
		t.Run(name, func(t *testing.T) {
			target, err := ParseCatalog([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if target.Kind != KindCatalog || len(target.Tools) != 2 || target.Tools[0].Name != "get_a" || !target.Tools[1].SeedMarker {
				t.Fatalf("target = %+v", target)
			}
			if a := target.Tools[0].Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint != nil {
				t.Errorf("annotations = %+v", a)
			}
			if target.Tools[0].Line < 1 || target.Tools[1].Line <= target.Tools[0].Line {
				t.Errorf("lines %d, %d", target.Tools[0].Line, target.Tools[1].Line)
			}
			m, err := target.Tools[0].MCP()
			if err != nil || m.Name != "get_a" || m.Description != "Gets a." || m.Annotations == nil || !m.Annotations.ReadOnlyHint {
				t.Errorf("MCP() = %+v, %v", m, err)
			}
			if name == "testdata shape" && (target.Server == nil || target.Server.Name != "s" || target.ProtocolVersion != "2025-11-25") {
				t.Errorf("server %+v, protocol %q", target.Server, target.ProtocolVersion)
			}
		})
	}
}

// TestParseCatalogErrors checks that every malformed catalog is refused
// with a message a person can act on; an empty catalog is one of them.
func TestParseCatalogErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "the file is empty"},
		{"  \n", "the file is empty"},
		{`{"tools": []}`, "the catalog lists no tools"},
		{`[]`, "the catalog lists no tools"},
		{`{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}`, "the catalog lists no tools"},
		{"{\n  \"tools\": [\n    {\"name\": \"a\",}\n  ]\n}", "not valid JSON: line 3, column 18"},
		{`{"tools": [{"name": "a"}]`, "ends too early"},
		{`{"tools": [{"name": "a"}]} {}`, "more than one value"},
		{`{"server": {}}`, `no "tools" array`},
		{`{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no such method"}}`, `a JSON-RPC error response (-32601: "no such method")`},
		{`{"result": 3}`, `"result" is a number`},
		{`{"tools": {"name": "a"}}`, `"tools" is an object, not an array of tools`},
		{`"tools"`, "a string, not a catalog"},
		{`[{"name": "a"}, "b"]`, "tools[1] (line 1) is a string, not a tool object"},
		{"[\n{\"name\": \"a\"},\n{\"description\": \"no name\"}\n]", `tools[1] (line 3) has no "name"`},
		{`[{"name": "a", "annotations": {"readOnlyHint": "yes"}}]`, "annotations.readOnlyHint is a string, want bool"},
		{`[{"name": 7}]`, "name is a number, want string"},
	} {
		_, err := ParseCatalog([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCatalog(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestReadCatalogNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	if _, err := ReadCatalog(missing); err == nil || err.Error() != missing+": no such file" {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"tools": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCatalog(empty); err == nil || !strings.HasPrefix(err.Error(), empty+": the catalog lists no tools") {
		t.Errorf("empty catalog: %v", err)
	}
}

// FuzzParseCatalog: any input gives a target or an error, never a panic,
// and a target always has named tools.
func FuzzParseCatalog(f *testing.F) {
	for _, s := range []string{
		`{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}`,
		`[{"name": "a", "resolve": true, "_meta": {"mcp.dev/effect": "read"}}]`,
		`{"result": {"tools": [{"name": "x", "annotations": {"readOnlyHint": true}}]}}`,
		`{"error": {"code": 1, "message": "m"}}`,
		`{"tools": []}`, `[1]`, `{`, "\xef\xbb\xbf[]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		target, err := ParseCatalog(data)
		if err != nil {
			return
		}
		if len(target.Tools) == 0 {
			t.Fatal("a catalog without tools was accepted")
		}
		for _, tool := range target.Tools {
			if tool.Name == "" {
				t.Fatal("a tool without a name was accepted")
			}
			if _, err := tool.MCP(); err != nil {
				t.Fatalf("MCP(): %v", err)
			}
		}
	})
}
