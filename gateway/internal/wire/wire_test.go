package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

func TestRequestTraceContext(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name, meta, want string
		state            string
	}{
		{name: "no _meta", want: `{"traceparent":"` + tp + `"}`},
		{name: "client's context replaced", meta: `{"traceparent":"00-aa-bb-01","a":1,"tracestate":"x=y","progressToken":"p"}`,
			state: "k=v", want: `{"traceparent":"` + tp + `","tracestate":"k=v","a":1,"progressToken":"p"}`},
		{name: "escaped spelling replaced too", meta: `{"tr\u0061ceparent":"00-aa-bb-01"}`, want: `{"traceparent":"` + tp + `"}`},
		{name: "any case replaced too", meta: `{"TraceParent":"00-aa-bb-01","TRACESTATE":"x=y","b":2}`, want: `{"traceparent":"` + tp + `","b":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := wire.Request(json.RawMessage("1"), "tools/call", wire.Params{Name: "f", Meta: json.RawMessage(tc.meta), TraceParent: tp, TraceState: tc.state})
			if !json.Valid(b) {
				t.Fatalf("not JSON: %s", b)
			}
			params, _, _ := rawjson.Get(b, "params")
			meta, _, _ := rawjson.Get(params, "_meta")
			if string(meta) != tc.want {
				t.Errorf("_meta = %s, want %s", meta, tc.want)
			}
			if k, dup, _ := rawjson.Duplicate(meta); dup {
				t.Errorf("_meta repeats %q", k)
			}
		})
	}
	b := wire.Request(json.RawMessage("1"), "tools/call", wire.Params{Name: "f", Meta: json.RawMessage(`{"a":1}`)})
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f","_meta":{"a":1}}}`; string(b) != want {
		t.Errorf("without a trace context: %s, want %s", b, want)
	}
}
