package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mirrored is a tool whose schema mirrors three arguments into headers,
// one of them nested.
var mirrored = &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"count"},
	"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
	"note":{"type":"string"}}}`)}

func TestParamHeaders(t *testing.T) {
	t.Parallel()
	h := ParamHeaders(mirrored, json.RawMessage(`{"region":"eu west ","count":3,"opts":{"dry":true},"note":"n"}`))
	want := map[string]string{"Mcp-Param-Region": "=?base64?ZXUgd2VzdCA=?=", "Mcp-Param-Count": "3", "Mcp-Param-Dry-Run": "true"}
	if len(h) != len(want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h := ParamHeaders(mirrored, json.RawMessage(`{"count":1.5,"region":null}`)); len(h) != 0 {
		t.Errorf("headers of arguments no header may carry: %v", h)
	}
}

func TestCheckParamHeaders(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"region":"eu","count":3}`)
	base := func() http.Header { return http.Header{"Mcp-Param-Region": {"eu"}, "Mcp-Param-Count": {"3"}} }
	if err := CheckParamHeaders(base(), mirrored, args); err != nil {
		t.Fatalf("matching headers: %v", err)
	}
	for name, change := range map[string]func(http.Header){
		"differs":    func(h http.Header) { h.Set("Mcp-Param-Region", "us") },
		"missing":    func(h http.Header) { h.Del("Mcp-Param-Count") },
		"repeated":   func(h http.Header) { h.Add("Mcp-Param-Region", "us") },
		"for absent": func(h http.Header) { h.Set("Mcp-Param-Dry-Run", "true") },
		"bad base64": func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?%%%?=") },
	} {
		h := base()
		change(h)
		var je *jsonrpc.Error
		if err := CheckParamHeaders(h, mirrored, args); !errors.As(err, &je) || je.Code != mcp.CodeHeaderMismatch {
			t.Errorf("%s: %v, want -32020", name, err)
		}
	}
	h := base()
	h.Set("Mcp-Param-Region", "=?base64?ZXU=?=")
	if err := CheckParamHeaders(h, mirrored, args); err != nil {
		t.Errorf("base64 of the argument: %v", err)
	}
}
