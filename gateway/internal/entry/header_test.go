package entry

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

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu","count":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	base := func() http.Header {
		return http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"t"}, "Mcp-Protocol-Version": {"2026-07-28"},
			"Mcp-Param-Region": {"eu"}, "Mcp-Param-Count": {"3"}}
	}
	if err := CheckHeaders(base(), m, mirrored); err != nil {
		t.Fatalf("matching headers: %v", err)
	}
	for name, change := range map[string]func(http.Header){
		"method repeated":  func(h http.Header) { h.Add("Mcp-Method", "tools/list") },
		"version repeated": func(h http.Header) { h.Add("Mcp-Protocol-Version", "2025-11-25") },
		"other method":     func(h http.Header) { h.Set("Mcp-Method", "tools/list") },
		"other name":       func(h http.Header) { h.Set("Mcp-Name", "u") },
		"param differs":    func(h http.Header) { h.Set("Mcp-Param-Region", "us") },
		"param missing":    func(h http.Header) { h.Del("Mcp-Param-Count") },
		"param repeated":   func(h http.Header) { h.Add("Mcp-Param-Region", "us") },
		"param for absent": func(h http.Header) { h.Set("Mcp-Param-Dry-Run", "true") },
		"bad base64":       func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?%%%?=") },
		"other version":    func(h http.Header) { h.Set("Mcp-Protocol-Version", "2026-08-01") },
	} {
		h := base()
		change(h)
		var je *jsonrpc.Error
		if err := CheckHeaders(h, m, mirrored); !errors.As(err, &je) || je.Code != mcp.CodeHeaderMismatch {
			t.Errorf("%s: %v, want -32020", name, err)
		}
	}
	// An encoded header that decodes to the argument matches.
	h := base()
	h.Set("Mcp-Param-Region", "=?base64?ZXU=?=")
	if err := CheckHeaders(h, m, mirrored); err != nil {
		t.Errorf("base64 of the argument: %v", err)
	}
	// The body must say its version and the client's capabilities.
	for name, body := range map[string]string{
		"no _meta":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu","count":3}}}`,
		"no version":            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu","count":3},"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"no capabilities":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu","count":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		"capabilities a string": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu","count":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"}}}`,
	} {
		m, err := Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var je *jsonrpc.Error
		if err := CheckHeaders(base(), m, mirrored); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", name, err)
		}
	}
}
