package resolve_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

// extensionSchema is the tool-resolution extension's own JSON Schema
// (draft 2020-12), kept with its source and licence in testdata.
const extensionSchema = "../testdata/tool-resolution/tool-resolution.schema.json"

// schemaDef returns a validator for one definition of the extension's
// schema: the whole schema with a $ref to the definition at its root.
func schemaDef(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(extensionSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", extensionSchema, err)
	}
	if s.Defs[name] == nil {
		t.Fatalf("%s has no definition %q", extensionSchema, name)
	}
	s.Ref = "#/$defs/" + name
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", extensionSchema, err)
	}
	return r
}

// validate checks one JSON value as it came over the wire against def.
func validate(t *testing.T, def *jsonschema.Resolved, what string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := def.Validate(v); err != nil {
		t.Errorf("%s does not pass the extension's schema: %v\n%s", what, err, raw)
	}
}

// TestSchemaValidatorRejects: the validator and the definitions used below
// refuse what the two failures of the extension shape used to send, so a
// passing TestExtensionShapeSchema means something.
func TestSchemaValidatorRejects(t *testing.T) {
	tool, result := schemaDef(t, "ResolvableTool"), schemaDef(t, "ResolveToolResult")
	for _, c := range []struct {
		def  *jsonschema.Resolved
		json string
	}{
		{tool, `{"name":"t","inputSchema":{"type":"object"},"_meta":{"io.modelcontextprotocol/tool-resolution":{"resolvable":true}},"resolve":true}`},
		{tool, `{"name":"t","inputSchema":{"type":"object"}}`},
		{result, `{"resultType":"complete","name":"t","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"mcp.dev/effect":"read"}}`},
		{result, `{"resultType":"complete","name":"t","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true}}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.json), &v); err != nil {
			t.Fatal(err)
		}
		if c.def.Validate(v) == nil {
			t.Errorf("accepted %s", c.json)
		}
	}
	var v any
	_ = json.Unmarshal([]byte(`{"resultType":"complete","name":"t","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"mcp.dev/policy-hints":{"effect":"read"}}}`), &v)
	if err := result.Validate(v); err != nil {
		t.Errorf("refused a valid result: %v", err)
	}
}

// addRepoTool adds get_repo: a function resolver whose resolution carries
// security schemes and further metadata, an object and a scalar.
func addRepoTool(rs *resolve.Server) {
	resolve.AddTool(rs, &mcp.Tool{Name: "get_repo", Description: "reads a repository",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, pathArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		},
		resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
			return resolve.Resolution{
				Annotations:     preflight.Annotations{ReadOnlyHint: true},
				Hints:           hints.Hints{ResultSensitivity: hints.SensitivityPublic},
				SecuritySchemes: []preflight.SecurityScheme{{Type: "noauth"}},
				Meta:            map[string]any{"example.com/cost": map[string]any{"units": 1}, "example.com/note": "a scalar"},
			}, nil
		}))
}

// toolOf decodes a tool as a client does.
func toolOf(t *testing.T, raw json.RawMessage) *mcp.Tool {
	t.Helper()
	var tool mcp.Tool
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatal(err)
	}
	return &tool
}

// TestExtensionShapeSchema: what our server sends a client that declared
// the extension passes the extension's schema in both eras: the
// capabilities, every tool of tools/list, and tools/resolve responses with
// and without the policy-hints and security-schemes metadata, for a table
// (manage_files) and for function resolvers.
func TestExtensionShapeSchema(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	resolvable, plain := schemaDef(t, "ResolvableTool"), schemaDef(t, "Tool")
	response, capabilities := schemaDef(t, "ResolveToolResultResponse"), schemaDef(t, "ToolResolutionServerCapabilities")
	declarations := map[string]map[string]any{
		"extension only": wiretest.WithExtension(preflight.ExtensionToolResolution),
		"every extension": wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints, preflight.MetaSecuritySchemes,
			"example.com/cost", "example.com/note"),
	}
	calls := []map[string]any{{"name": "get_repo", "arguments": map[string]any{"path": "o/r"}}}
	for _, action := range filetool.Actions {
		calls = append(calls, map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a.txt", "action": action, "content": "x"}})
	}
	for _, era := range eras {
		for dname, caps := range declarations {
			t.Run(era.name+"/"+dname, func(t *testing.T) {
				p := era.peer(f.URL, caps)
				defer p.Close()
				var c *wiretest.Response
				if era.name == preflight.ProtocolStateless {
					c = p.Call(t, "server/discover", nil)
				} else {
					c = p.Initialize(t)
				}
				raw, _ := json.Marshal(c.Result["capabilities"])
				validate(t, capabilities, "server capabilities", raw)

				list := p.Call(t, "tools/list", nil)
				tools, _ := list.Result["tools"].([]any)
				marked := 0
				for _, x := range tools {
					tool := x.(map[string]any)
					raw, _ := json.Marshal(tool)
					def := plain
					if preflight.IsResolvable(toolOf(t, raw)) {
						def, marked = resolvable, marked+1
					}
					validate(t, def, "tools/list tool "+tool["name"].(string), raw)
				}
				if marked < 2 {
					t.Fatalf("tools/list marks %d tools resolvable: %s", marked, list.Raw)
				}
				for _, params := range calls {
					r := p.Call(t, "tools/resolve", params)
					if r.Error != nil {
						t.Fatalf("tools/resolve %v: %+v", params, r.Error)
					}
					validate(t, response, "tools/resolve response", r.Raw)
					meta := extensionMeta(r)
					_, hasHints := meta[preflight.MetaPolicyHints]
					if every := dname == "every extension"; hasHints != every {
						t.Errorf("%v: policy hints sent = %v, want %v: %s", params, hasHints, every, r.Raw)
					}
					if strings.Contains(string(r.Raw), `"mcp.dev/effect"`) {
						t.Errorf("%v: scalar mcp.dev/ keys in an extension result: %s", params, r.Raw)
					}
					if params["name"] != "get_repo" {
						continue
					}
					// Further metadata only under declared keys, and only
					// objects.
					want := map[string]bool{preflight.MetaPolicyHints: true, preflight.MetaSecuritySchemes: true, "example.com/cost": true}
					if dname != "every extension" {
						want = map[string]bool{}
					}
					for k := range meta {
						if !want[k] {
							t.Errorf("get_repo: unexpected _meta key %q: %s", k, r.Raw)
						}
						delete(want, k)
					}
					if len(want) > 0 {
						t.Errorf("get_repo: _meta lacks %v: %s", want, r.Raw)
					}
				}
			})
		}
	}
}
