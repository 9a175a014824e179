package resolve_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) != "" {
		os.Exit(serveStdio())
	}
	goleak.VerifyTestMain(m)
}

// fixture serves manage_files plus tools that exercise the error paths,
// over HTTP in both eras.
type fixture struct {
	URL    string
	server *mcp.Server
	close  func()
}

type pathArgs struct {
	Path string `json:"path"`
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "v1"}, nil)
	rs := resolve.NewServer(s, nil)
	filetool.Add(rs, root)

	addErrorPathTools(s, rs)
	addRepoTool(rs)

	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	return &fixture{URL: hs.URL, server: s, close: hs.Close}
}

// addErrorPathTools adds tools that take the error paths of tools/resolve:
// a resolver that fails, one that panics, one whose resolution exceeds its
// static bounds, one whose hints contradict its annotations, and a tool
// that is not resolvable.
func addErrorPathTools(s *mcp.Server, rs *resolve.Server) {
	noop := func(context.Context, *mcp.CallToolRequest, pathArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	resolver := func(r resolve.Resolution, err error) resolve.Resolver {
		return resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) { return r, err })
	}
	resolve.AddTool(rs, &mcp.Tool{Name: "fails", Description: "resolver errors"}, noop,
		resolver(resolve.Resolution{}, errors.New("backend unreachable")))
	resolve.AddTool(rs, &mcp.Tool{Name: "panics", Description: "resolver panics"}, noop,
		resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) { panic("boom") }))
	// liar: static read-only, resolves to a write: must be withheld.
	resolve.AddTool(rs, &mcp.Tool{Name: "liar", Description: "resolution exceeds its bounds",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, noop,
		resolver(resolve.Resolution{Annotations: preflight.Annotations{DestructiveHint: true}}, nil))
	resolve.AddTool(rs, &mcp.Tool{Name: "muddled", Description: "hints contradict annotations"}, noop,
		resolver(resolve.Resolution{Annotations: preflight.Annotations{DestructiveHint: true}, Hints: hints.Hints{Effect: hints.EffectRead}}, nil))
	mcp.AddTool(s, &mcp.Tool{Name: "plain", Description: "not resolvable"}, noop)
}

func find(t *testing.T, list map[string]any, name string) map[string]any {
	t.Helper()
	tools, _ := list["tools"].([]any)
	for _, x := range tools {
		if m := x.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("tool %q not in tools/list: %s", name, wiretest.MustJSON(list))
	return nil
}

var eras = []struct {
	name string
	peer func(url string, caps map[string]any) *wiretest.Peer
}{
	{"2026-07-28", wiretest.Stateless},
	{"2025-11-25", wiretest.Legacy},
}

func TestListMarkersAndCapabilities(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	for _, era := range eras {
		for _, ext := range []bool{false, true} {
			name := era.name + "/plain"
			var caps map[string]any
			if ext {
				name = era.name + "/extension"
				caps = wiretest.WithExtension(preflight.ExtensionToolResolution)
			}
			t.Run(name, func(t *testing.T) {
				p := era.peer(f.URL, caps)
				defer p.Close()
				var capsResult map[string]any
				if era.name == "2026-07-28" {
					capsResult = p.Call(t, "server/discover", nil).Result
				} else {
					capsResult = p.Initialize(t).Result
				}
				c := capsResult["capabilities"].(map[string]any)
				if got := c["tools"].(map[string]any)["resolve"]; got != true {
					t.Errorf("capabilities.tools.resolve = %v, want true", got)
				}
				for _, id := range []string{preflight.ExtensionToolResolution, preflight.MetaPolicyHints, preflight.MetaSecuritySchemes} {
					if v, ok := c["extensions"].(map[string]any)[id]; !ok || !reflect.DeepEqual(v, map[string]any{}) {
						t.Errorf("capabilities.extensions lacks %s: {}: %s", id, wiretest.MustJSON(c))
					}
				}

				r := p.Call(t, "tools/list", nil)
				if r.Error != nil {
					t.Fatalf("tools/list: %+v", r.Error)
				}
				mf := find(t, r.Result, filetool.Name)
				// The seed's top-level marker only for a client that did
				// not declare the extension, whose schema admits no extra
				// field on a tool.
				if _, has := mf["resolve"]; has == ext || !ext && mf["resolve"] != true {
					t.Errorf("manage_files: resolve = %v (present %v), want it only without the extension", mf["resolve"], has)
				}
				meta, _ := mf["_meta"].(map[string]any)
				marker, hasMarker := meta[preflight.ExtensionToolResolution]
				if ext != hasMarker {
					t.Errorf("extension marker present = %v, want %v (meta %v)", hasMarker, ext, meta)
				}
				if ext && !reflect.DeepEqual(marker, map[string]any{"resolvable": true}) {
					t.Errorf("marker = %v", marker)
				}
				wantAnn := map[string]any{"title": "Manage files", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}
				if !reflect.DeepEqual(mf["annotations"], wantAnn) {
					t.Errorf("static annotations = %v, want the worst case %v", mf["annotations"], wantAnn)
				}
				if meta[preflight.MetaEffect] != "delete" || meta[preflight.MetaRequiresConfirmation] != true || meta[preflight.MetaIdempotent] != false {
					t.Errorf("static hints = %v, want the worst case (delete, confirmation, not idempotent)", meta)
				}
				plain := find(t, r.Result, "plain")
				if _, ok := plain["resolve"]; ok {
					t.Errorf("plain tool carries resolve: %v", plain)
				}
			})
		}
	}
}

// seedAnnotations are seed 000's per-action annotations.
var seedAnnotations = map[string]map[string]any{
	"read":    {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	"append":  {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
	"replace": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
	"delete":  {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
}

var seedEffects = map[string]string{"read": "read", "append": "write", "replace": "write", "delete": "delete"}

func TestResolveShapes(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	for _, era := range eras {
		// A client that declared only the extension gets no policy hints:
		// they are extension metadata it did not ask for.
		t.Run(era.name+"/extension-without-hints", func(t *testing.T) {
			p := era.peer(f.URL, wiretest.WithExtension(preflight.ExtensionToolResolution))
			defer p.Close()
			for _, action := range filetool.Actions {
				r := p.Call(t, "tools/resolve", map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a.txt", "action": action, "content": "x"}})
				if r.Error != nil {
					t.Fatalf("%s: %+v", action, r.Error)
				}
				if meta := extensionMeta(r); meta != nil || !reflect.DeepEqual(r.Result["annotations"], seedAnnotations[action]) {
					t.Errorf("%s: result = %s, want the annotations and no extension metadata", action, r.Raw)
				}
			}
		})
		t.Run(era.name+"/extension", func(t *testing.T) {
			p := era.peer(f.URL, wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints))
			defer p.Close()
			for _, action := range filetool.Actions {
				r := p.Call(t, "tools/resolve", map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a.txt", "action": action, "content": "x"}})
				if r.Error != nil {
					t.Fatalf("%s: %+v", action, r.Error)
				}
				if r.Result["resultType"] != "complete" || r.Result["name"] != filetool.Name {
					t.Errorf("%s: result = %s", action, r.Raw)
				}
				if _, ok := r.Result["tool"]; ok {
					t.Errorf("%s: extension result carries a tool: %s", action, r.Raw)
				}
				if !reflect.DeepEqual(r.Result["annotations"], seedAnnotations[action]) {
					t.Errorf("%s: annotations = %v, want %v", action, r.Result["annotations"], seedAnnotations[action])
				}
				meta := extensionMeta(r)
				wantConfirm := action == "replace" || action == "delete"
				want := map[string]any{preflight.MetaPolicyHints: map[string]any{
					"effect": seedEffects[action], "idempotent": action != "append", "requiresConfirmation": wantConfirm,
				}}
				if !reflect.DeepEqual(meta, want) {
					t.Errorf("%s: _meta = %v, want the hints as one object and nothing else %v", action, meta, want)
				}
			}
		})
		t.Run(era.name+"/seed", func(t *testing.T) {
			p := era.peer(f.URL, nil)
			defer p.Close()
			listed := find(t, p.Call(t, "tools/list", nil).Result, filetool.Name)
			for _, action := range filetool.Actions {
				r := p.Call(t, "tools/resolve", map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a.txt", "action": action}})
				if r.Error != nil {
					t.Fatalf("%s: %+v", action, r.Error)
				}
				tool, ok := r.Result["tool"].(map[string]any)
				if !ok {
					t.Fatalf("%s: no tool in seed-shape result: %s", action, r.Raw)
				}
				for _, k := range []string{"name", "description", "inputSchema"} {
					if !reflect.DeepEqual(tool[k], listed[k]) {
						t.Errorf("%s: %s differs from tools/list:\n got %v\nwant %v", action, k, tool[k], listed[k])
					}
				}
				if tool["resolve"] != true {
					t.Errorf("%s: resolved tool lacks resolve: true", action)
				}
				ann := tool["annotations"].(map[string]any)
				if ann["title"] != "Manage files" {
					t.Errorf("%s: title = %v", action, ann["title"])
				}
				delete(ann, "title")
				if !reflect.DeepEqual(ann, seedAnnotations[action]) {
					t.Errorf("%s: annotations = %v, want %v", action, ann, seedAnnotations[action])
				}
				if got := tool["_meta"].(map[string]any)[preflight.MetaEffect]; got != seedEffects[action] {
					t.Errorf("%s: effect in tool _meta = %v, want %s", action, got, seedEffects[action])
				}
				_, hasType := r.Result["resultType"]
				if hasType != (era.name == "2026-07-28") {
					t.Errorf("%s: resultType present = %v in era %s", action, hasType, era.name)
				}
			}
		})
	}
}

// extensionMeta returns the _meta of an extension-shape result without the
// core io.modelcontextprotocol/serverInfo the SDK adds under 2026-07-28,
// nil if nothing else is left.
func extensionMeta(r *wiretest.Response) map[string]any {
	meta, _ := r.Result["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	delete(meta, "io.modelcontextprotocol/serverInfo")
	if len(meta) == 0 {
		return nil
	}
	return meta
}

func TestBadInputs(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	mf := func(args map[string]any) map[string]any {
		return map[string]any{"name": filetool.Name, "arguments": args}
	}
	cases := []struct {
		name     string
		params   map[string]any
		caps     map[string]any
		code     int64
		contains string
	}{
		{"unknown tool", map[string]any{"name": "nope", "arguments": map[string]any{}}, nil, -32602, `tool "nope" is unknown or not resolvable`},
		{"tool without resolver", map[string]any{"name": "plain", "arguments": map[string]any{"path": "x"}}, nil, -32602, `tool "plain" is unknown or not resolvable`},
		{"missing name", map[string]any{"arguments": map[string]any{}}, nil, -32602, `missing "name"`},
		{"missing arguments", map[string]any{"name": filetool.Name}, nil, -32602, `missing "arguments"`},
		{"action outside enum", mf(map[string]any{"path": "a", "action": "shred"}), nil, -32602, "action"},
		{"missing required path", mf(map[string]any{"action": "read"}), nil, -32602, "path"},
		{"path of the wrong type", mf(map[string]any{"path": 7, "action": "read"}), nil, -32602, "path"},
		{"arguments not an object", map[string]any{"name": filetool.Name, "arguments": []any{1}}, nil, -32602, ""},
		{"resolver error", map[string]any{"name": "fails", "arguments": map[string]any{"path": "a"}}, nil, -32603, `could not resolve tool "fails"`},
		{"resolver panic", map[string]any{"name": "panics", "arguments": map[string]any{"path": "a"}}, nil, -32603, `could not resolve tool "panics"`},
		{"resolution whose hints contradict its annotations", map[string]any{"name": "muddled", "arguments": map[string]any{"path": "a"}}, nil, -32603, `could not resolve tool "muddled"`},
		{"resolution beyond static bounds", map[string]any{"name": "liar", "arguments": map[string]any{"path": "a"}}, nil, -32603, "riskier than its static declaration in readOnlyHint (static true, resolved false)"},
		{"unsupported extension settings", mf(map[string]any{"path": "a", "action": "read"}),
			map[string]any{"extensions": map[string]any{preflight.ExtensionToolResolution: map[string]any{"partial": true}}}, -32021, "unsupported settings"},
	}
	for _, era := range eras {
		for _, c := range cases {
			t.Run(era.name+"/"+c.name, func(t *testing.T) {
				p := era.peer(f.URL, c.caps)
				defer p.Close()
				r := p.Call(t, "tools/resolve", c.params)
				if r.Error == nil {
					t.Fatalf("want error %d, got result %s", c.code, r.Raw)
				}
				if r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.contains) {
					t.Errorf("error = %d %q, want %d containing %q", r.Error.Code, r.Error.Message, c.code, c.contains)
				}
				if c.code == -32021 {
					var data map[string]any
					json.Unmarshal(r.Error.Data, &data)
					want := map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{preflight.ExtensionToolResolution: map[string]any{}}}}
					if !reflect.DeepEqual(data, want) {
						t.Errorf("data = %v, want %v", data, want)
					}
				}
				// The server keeps serving after every failure.
				if r := p.Call(t, "tools/resolve", mf(map[string]any{"path": "a", "action": "read"})); r.Error != nil && c.code != -32021 {
					t.Errorf("after %s: %+v", c.name, r.Error)
				}
			})
		}
	}
}

// TestNullParams: tools/resolve with null or missing params is -32602 in
// both eras, and the server goes on serving.
func TestNullParams(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	for _, era := range eras {
		p := era.peer(f.URL, nil)
		if era.name != "2026-07-28" {
			p.Initialize(t)
		}
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":90,"method":"tools/resolve","params":null}`,
			`{"jsonrpc":"2.0","id":91,"method":"tools/resolve"}`,
		} {
			status, r := p.PostRaw(t, []byte(body))
			if r == nil || r.Error == nil {
				if era.name == "2026-07-28" && status >= 400 {
					continue // refused by the SDK before it reaches resolve
				}
				t.Errorf("%s %s: HTTP %d, %+v", era.name, body, status, r)
				continue
			}
			if era.name != "2026-07-28" && r.Error.Code != -32602 {
				t.Errorf("%s %s: %+v, want -32602", era.name, body, r.Error)
			}
		}
		if r := p.Call(t, "tools/resolve", map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a", "action": "read"}}); r.Error != nil {
			t.Errorf("%s: after null params: %+v", era.name, r.Error)
		}
		p.Close()
	}
}

func TestMalformedJSON(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	p := wiretest.Stateless(f.URL, nil)
	status, r := p.PostRaw(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/resolve","params":{"name":`))
	if r != nil && r.Error != nil && r.Error.Code == -32700 {
		return
	}
	if status < 400 {
		t.Fatalf("truncated JSON: HTTP %d, response %+v; want a parse error", status, r)
	}
}

// TestDeterministicWithinSession: a function resolver that reads changing
// state answers identically within one legacy session, and freshly in
// another.
func TestDeterministicWithinSession(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "det", Version: "v1"}, nil)
	rs := resolve.NewServer(s, nil)
	var public = true // the state the resolver reads
	resolve.AddTool(rs, &mcp.Tool{Name: "get_repo", Description: "reads a repository",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, pathArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		},
		resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
			r := resolve.Resolution{Annotations: preflight.Annotations{ReadOnlyHint: true}}
			if public {
				r.SecuritySchemes = []preflight.SecurityScheme{{Type: "noauth"}}
				r.Hints.ResultSensitivity = hints.SensitivityPublic
			} else {
				r.SecuritySchemes = []preflight.SecurityScheme{{Type: "oauth2", Scopes: []string{"repo"}}}
				r.Hints.ResultSensitivity = hints.SensitivityConfidential
			}
			return r, nil
		}))
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer hs.Close()

	resolveOnce := func(p *wiretest.Peer) map[string]any {
		r := p.Call(t, "tools/resolve", map[string]any{"name": "get_repo", "arguments": map[string]any{"path": "o/r"}})
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		return r.Result["tool"].(map[string]any)
	}
	first := wiretest.Legacy(hs.URL, nil)
	defer first.Close()
	a := resolveOnce(first)
	public = false
	if b := resolveOnce(first); !reflect.DeepEqual(a, b) {
		t.Errorf("same session, same arguments, different results:\n%v\n%v", a, b)
	}
	second := wiretest.Legacy(hs.URL, nil)
	defer second.Close()
	c := resolveOnce(second)
	if got := c["securitySchemes"]; !reflect.DeepEqual(got, []any{map[string]any{"type": "oauth2", "scopes": []any{"repo"}}}) {
		t.Errorf("new session: securitySchemes = %v, want the oauth2 scheme", got)
	}
	if got := c["_meta"].(map[string]any)[preflight.MetaResultSensitivity]; got != "confidential" {
		t.Errorf("new session: resultSensitivity = %v", got)
	}
	if got := a["securitySchemes"]; !reflect.DeepEqual(got, []any{map[string]any{"type": "noauth"}}) {
		t.Errorf("first session: securitySchemes = %v, want noauth", got)
	}
}

func TestOverridesWin(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := filetool.NewServer(root, &resolve.ServerOptions{Overrides: map[string]hints.Hints{
		filetool.Name: {ResultSensitivity: hints.SensitivityRestricted, RequiresConfirmation: hints.Bool(true)},
	}})
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer hs.Close()
	p := wiretest.Stateless(hs.URL, wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints))
	meta := find(t, p.Call(t, "tools/list", nil).Result, filetool.Name)["_meta"].(map[string]any)
	if meta[preflight.MetaResultSensitivity] != "restricted" {
		t.Errorf("tools/list: override not applied: %v", meta)
	}
	r := p.Call(t, "tools/resolve", map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a", "action": "read"}})
	rm, _ := r.Result["_meta"].(map[string]any)[preflight.MetaPolicyHints].(map[string]any)
	if rm["requiresConfirmation"] != true || rm["resultSensitivity"] != "restricted" || rm["effect"] != "read" {
		t.Errorf("resolution _meta = %s, want the deployer's confirmation and sensitivity over the server's, effect kept", r.Raw)
	}
}

func TestRegistrationMisuse(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"mode": {Type: "string", Enum: []any{"a", "b"}},
	}}
	row := resolve.Resolution{Annotations: preflight.Annotations{ReadOnlyHint: true}}
	cases := []struct {
		name  string
		table *resolve.Table
		want  string
	}{
		{"unknown argument", &resolve.Table{Argument: "nope", Rows: map[string]resolve.Resolution{"a": row}}, `argument "nope", which the input schema does not define`},
		{"row outside enum", &resolve.Table{Argument: "mode", Rows: map[string]resolve.Resolution{"a": row, "b": row, "c": row}}, `row "c" is not a value`},
		{"enum value without row", &resolve.Table{Argument: "mode", Rows: map[string]resolve.Resolution{"a": row}}, `value "b" of argument "mode" has no row`},
		{"contradicting hint", &resolve.Table{Argument: "mode", Rows: map[string]resolve.Resolution{"a": row, "b": {Hints: hints.Hints{Effect: hints.EffectRead}}}}, `row "b": hints contradict the annotations: mcp.dev/effect: "read" but readOnlyHint is false`},
		{"invalid hint", &resolve.Table{Argument: "mode", Rows: map[string]resolve.Resolution{"a": row, "b": {Hints: hints.Hints{Effect: "shred"}}}}, "allowed: read, write, external, delete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(error).Error(), c.want) {
					t.Errorf("panic = %v, want one containing %q", p, c.want)
				}
			}()
			rs := resolve.NewServer(mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil), nil)
			rs.AddTool(&mcp.Tool{Name: "t", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			}, c.table)
		})
	}
}
