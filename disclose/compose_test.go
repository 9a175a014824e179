package disclose_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

type fileArgs struct {
	Path   string `json:"path" jsonschema:"file path"`
	Action string `json:"action" jsonschema:"read or delete"`
}

var fileTable = &resolve.Table{
	Argument: "action",
	Rows: map[string]resolve.Resolution{
		"read":   {Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}, Hints: hints.Hints{Effect: hints.EffectRead}},
		"delete": {Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true}, Hints: hints.Hints{Effect: hints.EffectDelete}},
	},
}

// resolvableServer has manage_files, resolvable by action, with
// progressive disclosure installed before or after tool resolution.
func resolvableServer(t *testing.T, discloseFirst bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v0"}, nil)
	var ds *disclose.Server
	if discloseFirst {
		ds = disclose.New(s, nil)
	}
	rs := resolve.NewServer(s, nil)
	if !discloseFirst {
		ds = disclose.New(s, nil)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},"action":{"type":"string","enum":["read","delete"],"description":"what to do"}},"required":["path","action"]}`)
	resolve.AddTool(rs, &mcp.Tool{Name: "manage_files", Description: "Read or delete a file. Paths are relative to the root.", InputSchema: schema},
		func(_ context.Context, _ *mcp.CallToolRequest, a fileArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Action + " " + a.Path), nil, nil
		}, fileTable)
	ds.SetDetails("manage_files", &disclose.Details{Examples: []disclose.Example{{Description: "read", Input: map[string]any{"path": "a.txt", "action": "read"}}}})
	return s
}

// TestComposesWithResolve: a disclosed tool keeps its resolvable marker
// (the extension's _meta marker, declared here) and its worst-case annotations in the minimal listing, and
// tools/resolve answers as before, whichever was installed first.
func TestComposesWithResolve(t *testing.T) {
	for _, first := range []string{"disclose", "resolve"} {
		for _, era := range eras {
			t.Run(first+"-first/"+era, func(t *testing.T) {
				url := serve(t, resolvableServer(t, first == "disclose"))
				p := peer(t, url, era, "alice")
				p.Capabilities = wiretest.WithExtension(preflight.ExtensionToolResolution)
				list := p.Call(t, "tools/list", nil)
				tl := list.Result["tools"].([]any)[0].(map[string]any)
				if tl["description"] != "Read or delete a file." {
					t.Errorf("description %q", tl["description"])
				}
				if tl["inputSchema"].(map[string]any)["properties"] != nil {
					t.Errorf("schema not minimal: %v", tl["inputSchema"])
				}
				if _, seed := tl["resolve"]; seed {
					t.Errorf("the seed's marker sent to a client that declared the extension: %v", tl)
				}
				meta, _ := tl["_meta"].(map[string]any)
				if meta[preflight.ExtensionToolResolution] == nil || meta[preflight.MetaEffect] != "delete" {
					t.Errorf("_meta marker or hints lost: %v", meta)
				}
				// The worst case of the two rows, with only the values
				// that differ from the defaults (the Go SDK writes
				// readOnlyHint whatever its value).
				if ann, _ := tl["annotations"].(map[string]any); !reflect.DeepEqual(ann, map[string]any{"readOnlyHint": false, "idempotentHint": true, "openWorldHint": false}) {
					t.Errorf("worst-case annotations: %v", tl["annotations"])
				}
				// tools/resolve works without a fetch (it is not a call).
				r := p.Call(t, preflight.MethodResolve, map[string]any{"name": "manage_files", "arguments": map[string]any{"path": "a", "action": "read"}})
				if r.Error != nil {
					t.Fatalf("resolve: %+v", r.Error)
				}
				if ann, _ := r.Result["annotations"].(map[string]any); ann["readOnlyHint"] != true {
					t.Errorf("resolve: %s", r.Raw)
				}
				// The call is gated; the full description has the full schema.
				args := map[string]any{"path": "a", "action": "read"}
				refusal(t, call(t, p, "manage_files", args))
				m, _ := readMap(t, p, disclose.DefaultURI+"?tools=manage_files")
				full := m["manage_files"].(map[string]any)
				if full["inputSchema"].(map[string]any)["properties"] == nil || full["examples"] == nil {
					t.Errorf("full entry %v", full)
				}
				if full["description"] != "Read or delete a file. Paths are relative to the root." {
					t.Errorf("full description %v", full["description"])
				}
				succeeded(t, call(t, p, "manage_files", args), "read a")
			})
		}
	}
}

// Forms of the inject tool's questions.
type confirmForm struct {
	OK bool `json:"ok" jsonschema:"go ahead"`
}

type greetArgs struct {
	Name    string                       `json:"name" jsonschema:"who to greet"`
	Upper   string                       `json:"-" inject:"upper"`
	Confirm inject.Elicited[confirmForm] `json:"-" inject:"confirm"`
}

// injectServer has greet, whose upper parameter is computed by a resolver
// and whose confirm parameter asks the user.
func injectServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v0"}, nil)
	disclose.New(s, nil)
	upper := inject.NewResolver("upper", func(_ context.Context, in struct {
		Name string `arg:"name"`
	}) (string, error) {
		b := []byte(in.Name)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b), nil
	})
	confirm := inject.NewResolver("confirm", func(ctx context.Context, in struct {
		Upper string `inject:"upper"`
	}) (inject.Elicited[confirmForm], error) {
		return inject.Elicit[confirmForm](ctx, "Greet "+in.Upper+"?")
	})
	inject.AddTool(s, inject.NewInjector(nil), &mcp.Tool{Name: "greet", Description: "Greets someone by name, after asking."},
		func(_ context.Context, _ *inject.Request, in greetArgs) (*mcp.CallToolResult, error) {
			if !in.Confirm.Accepted() || !in.Confirm.Data.OK {
				return text("not greeted"), nil
			}
			return text("hello " + in.Upper), nil
		}, upper, confirm)
	return s
}

// TestComposesWithInject: resolver-injected parameters work as before on
// a disclosed tool, in both eras (a mid-call elicitation on legacy
// sessions, input_required rounds under 2026-07-28), with the Go SDK
// client; the injected parameters are not in the full description either.
func TestComposesWithInject(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			hs := httptest.NewServer(withPrincipals(endpoint.NewHandler(injectServer(), nil)))
			defer hs.Close()
			asked := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					if req.Params.Message != "Greet ADA?" {
						t.Errorf("question %q", req.Params.Message)
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
				},
			})
			var opts *mcp.ClientSessionOptions
			if era != "2026-07-28" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: era}
			}
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp?token=ada"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			args := &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "ada"}}
			res, err := cs.CallTool(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := disclose.ResultError(res); !ok || e.Code != disclose.CodeToolDescriptionRequired || asked != 0 {
				t.Fatalf("before fetch: %v %v (asked %d)", e, res, asked)
			}
			m, err := disclose.Fetch(ctx, cs, "", "greet")
			if err != nil {
				t.Fatal(err)
			}
			var full struct {
				InputSchema struct {
					Properties map[string]any `json:"properties"`
				} `json:"inputSchema"`
			}
			if err := json.Unmarshal(m["greet"], &full); err != nil || len(full.InputSchema.Properties) != 1 || full.InputSchema.Properties["name"] == nil {
				t.Errorf("full schema %s: %v", m["greet"], err)
			}
			res, err = cs.CallTool(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello ADA" || asked != 1 {
				t.Errorf("after fetch: %v (asked %d)", res.Content[0], asked)
			}
		})
	}
}
