package requeststate

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toolRequest(args string, user string) *mcp.CallToolRequest {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "delete_folder"}}
	if args != "" {
		req.Params.Arguments = json.RawMessage(args)
	}
	if user != "" {
		req.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: user, Scopes: []string{"files"}}}
	}
	return req
}

func TestBindingFor(t *testing.T) {
	digest := mustDigest(t, map[string]any{"path": "/srv/data", "recursive": true})
	tests := []struct {
		name string
		req  mcp.Request
		want Binding
	}{
		{
			"tool", toolRequest(`{"path":"/srv/data","recursive":true}`, "alice"),
			Binding{MethodCallTool, "delete_folder", digest, "folders", "alice"},
		},
		{
			"tool retry: reordered arguments, inputResponses and requestState",
			&mcp.CallToolRequest{
				Params: &mcp.CallToolParamsRaw{
					Name:           "delete_folder",
					Arguments:      json.RawMessage(`{ "recursive": true, "path": "/srv/data" }`),
					InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}},
					RequestState:   "AQJrMQ",
				},
				Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "alice"}},
			},
			Binding{MethodCallTool, "delete_folder", digest, "folders", "alice"},
		},
		{
			"tool without arguments", toolRequest("", ""),
			Binding{MethodCallTool, "delete_folder", mustDigest(t, map[string]any{}), "folders", ""},
		},
		{
			"tool with null arguments", toolRequest("null", ""),
			Binding{MethodCallTool, "delete_folder", mustDigest(t, map[string]any{}), "folders", ""},
		},
		{
			"token without user", &mcp.CallToolRequest{
				Params: &mcp.CallToolParamsRaw{Name: "delete_folder", Arguments: json.RawMessage(`{}`)},
				Extra:  &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Scopes: []string{"x"}}},
			},
			Binding{MethodCallTool, "delete_folder", mustDigest(t, nil), "folders", ""},
		},
		{
			"prompt", &mcp.GetPromptRequest{
				Params: &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"lang": "go", "file": "a.go"}, RequestState: "x"},
				Extra:  &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "bob"}},
			},
			Binding{MethodGetPrompt, "review", mustDigest(t, json.RawMessage(`{"file":"a.go","lang":"go"}`)), "folders", "bob"},
		},
		{
			"prompt without arguments", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{}}},
			Binding{MethodGetPrompt, "review", mustDigest(t, nil), "folders", ""},
		},
		{
			"resource", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///srv/data/report.txt", RequestState: "x"}},
			Binding{MethodReadResource, "file:///srv/data/report.txt", "", "folders", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BindingFor(tt.req, "folders")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("BindingFor =\n%+v, want\n%+v", got, tt.want)
			}
		})
	}
}

func TestBindingForErrors(t *testing.T) {
	for name, req := range map[string]mcp.Request{
		"nil":                   nil,
		"list tools":            &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}},
		"tool without params":   &mcp.CallToolRequest{},
		"nil tool request":      (*mcp.CallToolRequest)(nil),
		"prompt without params": &mcp.GetPromptRequest{},
		"resource, no params":   &mcp.ReadResourceRequest{},
		"invalid arguments":     toolRequest(`{"path":`, ""),
		"trailing arguments":    toolRequest(`{} {}`, ""),
	} {
		if b, err := BindingFor(req, "folders"); err == nil {
			t.Errorf("%s: BindingFor = %+v", name, b)
		}
	}
}

func TestRequestStateOf(t *testing.T) {
	for _, c := range []struct {
		req  mcp.Request
		want string
	}{
		{&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{RequestState: "a"}}, "a"},
		{&mcp.GetPromptRequest{Params: &mcp.GetPromptParams{RequestState: "b"}}, "b"},
		{&mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{RequestState: "c"}}, "c"},
		{&mcp.CallToolRequest{}, ""},
		{&mcp.ListToolsRequest{}, ""},
		{nil, ""},
	} {
		if got := RequestStateOf(c.req); got != c.want {
			t.Errorf("RequestStateOf(%T) = %q, want %q", c.req, got, c.want)
		}
	}
}

func TestSealRequestOpenRequest(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	first := toolRequest(`{"path":"/srv/data","recursive":true}`, "alice")
	if p, err := r.OpenRequest(first, "folders"); p != nil || err != nil {
		t.Fatalf("first round: OpenRequest = %q, %v; want nil, nil", p, err)
	}
	tok, err := r.SealRequest(first, "folders", []byte(`{"asked":["confirm"]}`))
	if err != nil {
		t.Fatal(err)
	}
	retry := func(args, user string) *mcp.CallToolRequest {
		req := toolRequest(args, user)
		req.Params.RequestState = tok
		req.Params.InputResponses = mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}
		return req
	}
	p, err := r.OpenRequest(retry(`{"recursive":true,"path":"/srv/data"}`, "alice"), "folders")
	if err != nil || string(p) != `{"asked":["confirm"]}` {
		t.Fatalf("retry: %q, %v", p, err)
	}
	for _, c := range []struct {
		name string
		req  mcp.Request
		aud  string
		want Reason
	}{
		{"other arguments", retry(`{"recursive":true,"path":"/"}`, "alice"), "folders", ReasonArguments},
		{"arguments without digest", retry(`{"path":`, "alice"), "folders", ReasonArguments},
		{"other user", retry(`{"recursive":true,"path":"/srv/data"}`, "mallory"), "folders", ReasonPrincipal},
		{"no user", retry(`{"recursive":true,"path":"/srv/data"}`, ""), "folders", ReasonPrincipal},
		{"other server", retry(`{"recursive":true,"path":"/srv/data"}`, "alice"), "files", ReasonAudience},
		{"prompt", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "delete_folder", RequestState: tok}, Extra: first.Extra}, "folders", ReasonMethod},
		{"garbage", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///", RequestState: "garbage!"}}, "folders", ReasonMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := r.OpenRequest(c.req, c.aud)
			if p != nil {
				t.Errorf("payload %q", p)
			}
			wantInvalid(t, err, c.want)
		})
	}
	// Misuse is an error, but not a refused token.
	if _, err := r.OpenRequest(&mcp.ListToolsRequest{}, "folders"); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("OpenRequest(ListToolsRequest) = %v", err)
	}
	if _, err := r.SealRequest(&mcp.ListToolsRequest{}, "folders", nil); err == nil {
		t.Error("SealRequest(ListToolsRequest) succeeded")
	}
	if _, err := r.SealRequest(first, "", nil); err == nil {
		t.Error("SealRequest without audience succeeded")
	}
}
