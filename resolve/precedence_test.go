package resolve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// TestReadmeTable: the README's table exactly as written, in both shapes
// and both eras, on the wire through Preflight. A resolved call is
// described by its row alone: read needs no confirmation (derived from its
// read-only annotations, not inherited from the static worst case), append
// neither (a write that is not destructive), replace and delete do (their
// rows ask for it).
func TestReadmeTable(t *testing.T) {
	hs := httptest.NewServer(filesServer())
	defer hs.Close()
	url := hs.URL + "/mcp"
	want := []struct {
		action   string
		confirm  policy.Value[bool]
		effect   policy.Value[hints.Effect]
		retry    bool
		readOnly bool
		metaSent hints.Hints // the row's hints as they travel
	}{
		{"read", policy.Value[bool]{Value: false, Source: policy.SourceDerived}, policy.Value[hints.Effect]{Value: hints.EffectRead, Source: policy.SourceResolved},
			true, true, hints.Hints{Effect: hints.EffectRead}},
		{"append", policy.Value[bool]{Value: false, Source: policy.SourceDerived}, policy.Value[hints.Effect]{Value: hints.EffectWrite, Source: policy.SourceResolved},
			false, false, hints.Hints{Effect: hints.EffectWrite}},
		{"replace", policy.Value[bool]{Value: true, Source: policy.SourceResolved}, policy.Value[hints.Effect]{Value: hints.EffectWrite, Source: policy.SourceResolved},
			true, false, hints.Hints{Effect: hints.EffectWrite, RequiresConfirmation: hints.Bool(true)}},
		{"delete", policy.Value[bool]{Value: true, Source: policy.SourceResolved}, policy.Value[hints.Effect]{Value: hints.EffectDelete, Source: policy.SourceResolved},
			true, false, hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true)}},
	}
	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		for _, shape := range []string{"extension", "seed"} {
			t.Run(era+"/"+shape, func(t *testing.T) {
				client := resolve.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
				opts := &resolve.ClientOptions{}
				if shape == "seed" {
					client = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
					if err := resolve.EnableClient(client); err != nil {
						t.Fatal(err)
					}
					opts.ResolveUnmarked = true // the SDK's Tool drops the seed's marker
				}
				cs := connect(t, client, url, era)
				tool := listed(t, cs)["manage_files"]
				// The static declaration is the worst case of the rows.
				static, err := hints.Read(tool.Meta)
				if err != nil || static.Effect != hints.EffectDelete || static.RequiresConfirmation == nil || !*static.RequiresConfirmation {
					t.Fatalf("static hints %+v, %v; want the worst case (delete, confirmation)", static, err)
				}
				for _, w := range want {
					d, err := resolve.Preflight(context.Background(), cs, tool, map[string]any{"path": "notes.txt", "action": w.action, "content": "x"}, opts)
					if err != nil {
						t.Fatalf("%s: %v", w.action, err)
					}
					if !d.Resolved || d.Shape != shape {
						t.Fatalf("%s: resolved %v in shape %q, want %q", w.action, d.Resolved, d.Shape, shape)
					}
					e := d.Effective
					if e.RequiresConfirmation != w.confirm || d.NeedsConfirmation() != w.confirm.Value || e.Effect != w.effect {
						t.Errorf("%s: confirmation %+v, effect %+v; want %+v, %+v", w.action, e.RequiresConfirmation, e.Effect, w.confirm, w.effect)
					}
					if d.SafeToRetry() != w.retry || e.ReadOnly.Value != w.readOnly {
						t.Errorf("%s: retry %v read-only %v, want %v %v", w.action, d.SafeToRetry(), e.ReadOnly.Value, w.retry, w.readOnly)
					}
					// On the wire: the row's own hints, nothing of the
					// static worst case.
					var sent hints.Hints
					if shape == "seed" {
						sent, err = hints.Read(d.Meta)
					} else {
						sent, err = hints.ReadObject(d.Meta[preflight.MetaPolicyHints])
						for k := range d.Meta {
							if k != preflight.MetaPolicyHints && k != "io.modelcontextprotocol/serverInfo" {
								t.Errorf("%s: unexpected key %q in the extension result's _meta", w.action, k)
							}
						}
					}
					if err != nil || !reflect.DeepEqual(sent, w.metaSent) {
						t.Errorf("%s: hints on the wire %+v, %v; want the row's %+v", w.action, sent, err, w.metaSent)
					}
				}
			})
		}
	}
}

// TestInferredEnum: a table on a struct-inferred schema gives its
// argument the rows' values as enum, so registration needs no Default and
// a value without a row is refused; with a Default no enum is added and
// such a value resolves to the Default.
func TestInferredEnum(t *testing.T) {
	hs := httptest.NewServer(filesServer())
	defer hs.Close()
	cs := connect(t, resolve.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), hs.URL+"/mcp", preflight.ProtocolStateless)
	tool := listed(t, cs)["manage_files"]
	var schema struct {
		Properties map[string]struct {
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	if err := remarshalJSON(tool.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := schema.Properties["action"].Enum, []any{"append", "delete", "read", "replace"}; !reflect.DeepEqual(got, want) {
		t.Errorf("action enum = %v, want %v", got, want)
	}
	if schema.Properties["path"].Enum != nil {
		t.Errorf("path has an enum: %v", schema.Properties["path"].Enum)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	rs := resolve.NewServer(s, nil)
	type levelArgs struct {
		Level int `json:"level"`
	}
	body := func(context.Context, *mcp.CallToolRequest, levelArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	resolve.AddTool(rs, &mcp.Tool{Name: "levels"}, body, &resolve.Table{Argument: "level", Rows: map[string]resolve.Resolution{
		"1": {Annotations: preflight.Annotations{ReadOnlyHint: true}},
		"2": {Annotations: preflight.Annotations{DestructiveHint: true}},
	}})
	resolve.AddTool(rs, &mcp.Tool{Name: "defaulted"}, body, &resolve.Table{Argument: "level",
		Rows:    map[string]resolve.Resolution{"1": {Annotations: preflight.Annotations{ReadOnlyHint: true}}},
		Default: &resolve.Resolution{Annotations: preflight.Annotations{IdempotentHint: true}}})
	hs2 := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer hs2.Close()
	cs2 := connect(t, resolve.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), hs2.URL, preflight.ProtocolStateless)
	tools := listed(t, cs2)
	for name, want := range map[string][]any{"levels": {1.0, 2.0}, "defaulted": nil} {
		if err := remarshalJSON(tools[name].InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if got := schema.Properties["level"].Enum; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: level enum = %v, want %v", name, got, want)
		}
	}
	ctx := context.Background()
	if _, err := resolve.Preflight(ctx, cs2, tools["levels"], map[string]any{"level": 3}, nil); !errors.Is(err, resolve.ErrInvalidArguments) {
		t.Errorf("levels: a value without a row: err = %v, want ErrInvalidArguments", err)
	}
	d, err := resolve.Preflight(ctx, cs2, tools["defaulted"], map[string]any{"level": 3}, nil)
	if err != nil || !d.Resolved || !d.Effective.Idempotent.Value {
		t.Errorf("defaulted: a value without a row: %+v, %v; want the Default", d, err)
	}
}

func remarshalJSON(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
