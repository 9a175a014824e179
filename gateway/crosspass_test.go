package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestCrossPassthrough checks the path of a 2025-11-25 client's tools/call
// to an upstream the gateway reaches in 2026-07-28 (the mixed case): it
// reaches the upstream re-encoded, not through the SDK's client, with the
// _meta the SDK's path sends (the client's session capabilities, the most
// verbose log level, the upstream's version, the gateway's clientInfo),
// and the client gets the same result as on the SDK's path (taken by a
// call with a progress token, whose token the SDK's path maps).
func TestCrossPassthrough(t *testing.T) {
	t.Parallel()
	upURL, headers, bodies := rawUpstreamBodies(t, "probe")
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "raw", URL: upURL}}})
	p := wiretest.Legacy(url, map[string]any{"elicitation": map[string]any{}})
	args := map[string]any{"n": json.Number("12345678901234567890")}
	passed := p.Call(t, "tools/call", map[string]any{"name": "probe", "arguments": args})
	decoded := p.Call(t, "tools/call", map[string]any{"name": "probe", "arguments": args, "_meta": map[string]any{"progressToken": "p1"}})
	if passed.Error != nil || decoded.Error != nil {
		t.Fatalf("calls: %s, %s", passed.Raw, decoded.Raw)
	}
	b := bodies()
	if len(b) != 2 {
		t.Fatalf("the upstream got %d calls, want 2", len(b))
	}
	// The passthrough writes the judged members in its own order under
	// id 1; the SDK's client writes _meta first, under ids of its own.
	if !strings.Contains(b[0], `"id":1,"method":"tools/call","params":{"name":"probe",`) {
		t.Errorf("the first call did not take the passthrough: the upstream got %s", b[0])
	}
	if got, want := metaOf(t, b[0]), metaOf(t, b[1]); got != strings.Replace(want, `,"progressToken":"preflight-1"`, "", 1) {
		t.Errorf("passed through, the upstream got _meta\n%s\nwant, as on the SDK's path,\n%s", got, want)
	}
	if h := headers()[0]; h.Get("Mcp-Protocol-Version") != modern || h.Get("Mcp-Name") != "probe" {
		t.Errorf("upstream headers: %v", h)
	}
	if got, want := resultOf(t, passed), resultOf(t, decoded); got != want {
		t.Errorf("passed through, the client got\n%s\nwant, as on the SDK's path,\n%s", got, want)
	}
}

// resultOf returns the result member of a response as it came.
func resultOf(t *testing.T, r *wiretest.Response) string {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return string(m.Result)
}

// metaOf returns the _meta of a request body, re-encoded with its keys
// sorted.
func metaOf(t *testing.T, body string) string {
	t.Helper()
	var m struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m.Params.Meta)
	return string(b)
}
