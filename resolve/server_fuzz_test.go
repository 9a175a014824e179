package resolve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// fuzzServer is newBenchServer plus the tools that take the error paths
// (addErrorPathTools).
func fuzzServer(tb testing.TB) *mcp.Server {
	s, rs := newBenchResolveServer(tb)
	addErrorPathTools(s, rs)
	return s
}

// fuzzCaps are the client capabilities of a peer that declares the
// extension, and of one that does not.
func fuzzCaps(extension bool) string {
	if extension {
		return `{"extensions":{"io.modelcontextprotocol/tool-resolution":{}}}`
	}
	return `{}`
}

// fuzzBodyFor returns the JSON-RPC request carrying params for peer p,
// with the request _meta spliced in (last, so that it wins) when p is
// stateless and params is a JSON object.
func fuzzBodyFor(params []byte, p *fuzzPeer) []byte {
	obj := bytes.TrimSpace(params)
	if p.stateless && json.Valid(obj) && len(obj) > 0 && obj[0] == '{' {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":` + fuzzCaps(p.extension) + `,` +
			`"io.modelcontextprotocol/clientInfo":{"name":"fuzz","version":"0"}}`
		if inner := bytes.TrimSpace(obj[1 : len(obj)-1]); len(inner) == 0 {
			params = []byte("{" + meta + "}")
		} else {
			params = append(append(append([]byte("{"), inner...), ','), meta+"}"...)
		}
	}
	return append(append([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/resolve","params":`), params...), '}')
}

// fuzzPeer posts raw tools/resolve requests in one era over one HTTP
// client: 2026-07-28 with the headers that era requires, or 2025-11-25 in
// one session opened once; declaring the extension or not.
type fuzzPeer struct {
	url       string
	stateless bool
	extension bool
	session   string
	client    *http.Client
}

func (p *fuzzPeer) post(t testing.TB, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if p.stateless {
		req.Header.Set("MCP-Protocol-Version", preflight.ProtocolStateless)
		req.Header.Set("Mcp-Method", preflight.MethodResolve)
	} else if p.session != "" {
		req.Header.Set("MCP-Protocol-Version", preflight.ProtocolLegacy)
		req.Header.Set("Mcp-Session-Id", p.session)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && p.session == "" {
		p.session = id
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading reply: %v", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = fuzzEventData(raw)
	}
	return resp.StatusCode, bytes.TrimSpace(raw)
}

// fuzzEventData returns the data of the event that holds a JSON-RPC
// response, or nil.
func fuzzEventData(stream []byte) []byte {
	for line := range strings.Lines(string(stream)) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(data), &probe) == nil && probe.Method == "" && probe.ID != nil {
				return []byte(strings.TrimSpace(data))
			}
		}
	}
	return nil
}

func (p *fuzzPeer) initialize(t testing.TB) {
	t.Helper()
	status, raw := p.post(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":`+fuzzCaps(p.extension)+`,"clientInfo":{"name":"fuzz","version":"0"}}}`))
	if status != http.StatusOK || p.session == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", status, p.session, raw)
	}
	p.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func (p *fuzzPeer) close() {
	if p.session != "" {
		req, _ := http.NewRequest(http.MethodDelete, p.url, nil)
		req.Header.Set("Mcp-Session-Id", p.session)
		req.Header.Set("MCP-Protocol-Version", preflight.ProtocolLegacy)
		if resp, err := p.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	p.client.CloseIdleConnections()
}

// fuzzCodes are the JSON-RPC error codes tools/resolve may answer a
// request with, whatever its params: invalid params, internal error, parse
// error, invalid request, missing capability.
var fuzzCodes = map[int64]bool{
	preflight.CodeInvalidParams:     true,
	preflight.CodeInternalError:     true,
	-32700:                          true,
	-32600:                          true,
	preflight.CodeMissingCapability: true,
}

// fuzzMaxError bounds an error's message and data whatever the params:
// errors name what is wrong, they do not repeat the request.
const fuzzMaxError = 4 << 10

// fuzzTransportCodes are the codes the SDK's HTTP handler answers with,
// before any method runs, when a request's _meta carries a protocol
// version it refuses (-32022 from the stateful handler, which serves no
// request carrying one) or one that disagrees with the headers (-32020).
// They are accepted only for params that have a _meta member.
var fuzzTransportCodes = map[int64]bool{-32020: true, -32022: true}

// FuzzResolveParams posts arbitrary tools/resolve params, in both protocol
// eras and both shapes, to a server with manage_files (table), get_file (function) and
// tools whose resolvers fail, panic or exceed their bounds, through
// endpoint.NewHandler over loopback HTTP. Invariants: no HTTP 5xx; a
// request that is JSON gets a JSON-RPC response, which is either a result
// in one of the two shapes or an error with one of fuzzCodes, whose
// message and data stay under fuzzMaxError however large the params; and
// the server answers a valid request afterwards, in the same session.
//
// mode selects the peer: bit 0 clear is 2026-07-28 (the request _meta is
// spliced into object params), set is 2025-11-25 (params sent as they
// are, in one session); bit 1 clear declares the extension (its shape),
// set does not (the seed's shape).
func FuzzResolveParams(f *testing.F) {
	s := fuzzServer(f)
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	f.Cleanup(hs.Close)
	var peers [4]*fuzzPeer
	for mode := range peers {
		// A reply slower than this is a failure too: a request that stalls
		// the server is a denial of service.
		client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
		p := &fuzzPeer{url: hs.URL, stateless: mode&1 == 0, extension: mode&2 == 0, client: client}
		if !p.stateless {
			p.initialize(f)
		}
		f.Cleanup(p.close)
		peers[mode] = p
	}

	for _, params := range []string{
		`{"name":"manage_files","arguments":{"path":"a.txt","action":"read"}}`,
		`{"name":"manage_files","arguments":{"path":"a.txt","action":"delete","content":"x"}}`,
		`{"name":"manage_files","arguments":{"path":"a.txt","action":"shred"}}`,
		`{"name":"manage_files","arguments":{"path":7,"action":"read"}}`,
		`{"name":"manage_files","arguments":{"action":"read"}}`,
		`{"name":"manage_files","arguments":{"path":"a","action":"read","extra":true}}`,
		`{"name":"manage_files","arguments":[1]}`,
		`{"name":"manage_files","arguments":null}`,
		`{"name":"manage_files"}`,
		`{"arguments":{}}`,
		`{"name":"","arguments":{}}`,
		`{"name":"nope","arguments":{}}`,
		`{"name":"noop","arguments":{"path":"a","action":"read"}}`,
		`{"name":"get_file","arguments":{"path":"public/x"}}`,
		`{"name":"get_file","arguments":{"path":"private/x"}}`,
		`{"name":"fails","arguments":{"path":"a"}}`,
		`{"name":"panics","arguments":{"path":"a"}}`,
		`{"name":"liar","arguments":{"path":"a"}}`,
		`{"name":5,"arguments":{}}`,
		`{"name":"manage_files","arguments":{"path":"a","action":"read"},"_meta":{"progressToken":"t"}}`,
		`{"name":"manage_files","arguments":{"path":"a","action":"read"},"_meta":5}`,
		`{"name":"manage_files","arguments":{"path":"a","action":"read"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tool-resolution":{"x":1}}}}}`,
		`{}`,
		`[]`,
		`"manage_files"`,
		`5`,
		`{"name":"manage_files","arguments":{"path":"a","action":"read"}`,
		``,
		`null`,
		// Large params that fail to decode, or name what does not exist:
		// the error must stay small.
		`{"name":{"x":"` + strings.Repeat("y", 64<<10) + `"},"arguments":{}}`,
		`{"name":"manage_files","arguments":"` + strings.Repeat(`\"`, 32<<10) + `"}`,
		`{"name":"` + strings.Repeat("n", 64<<10) + `","arguments":{}}`,
		`{"name":"manage_files","arguments":{"path":"a","action":"` + strings.Repeat("\u0001", 16<<10) + `"}}`,
		`[` + strings.Repeat(`"z",`, 16<<10) + `0]`,
	} {
		for mode := range uint8(len(peers)) {
			f.Add([]byte(params), mode)
		}
	}

	valid := []byte(`{"name":"manage_files","arguments":{"path":"a.txt","action":"read"}}`)
	f.Fuzz(func(t *testing.T, params []byte, mode uint8) {
		p := peers[mode%uint8(len(peers))]
		body := fuzzBodyFor(params, p)
		// What the server will see: params are raw bytes, so they may add
		// members to the request (a second "params", an "id", a "method").
		msg, decodeErr := jsonrpc.DecodeMessage(body)
		req, isRequest := msg.(*jsonrpc.Request)
		resolveCall := decodeErr == nil && isRequest && req.Method == preflight.MethodResolve && req.IsCall()
		status, raw := p.post(t, body)
		var err error
		switch {
		case decodeErr != nil || resolveCall:
			// The shape follows the peer's capabilities, unless the params
			// bring their own _meta (which may carry capabilities).
			shape := "any"
			var members map[string]json.RawMessage
			if resolveCall && json.Unmarshal(req.Params, &members) == nil && members["_meta"] == nil {
				shape = map[bool]string{true: "extension", false: "seed"}[p.extension]
			}
			err = checkResolveReply(status, raw, decodeErr == nil, params, shape)
		case status >= 500:
			err = fmt.Errorf("HTTP %d: %s", status, raw)
		}
		if err != nil {
			t.Errorf("stateless %v, extension %v, params %q:\n%v", p.stateless, p.extension, params, err)
		}
		// The server keeps serving, in the same session.
		status, raw = p.post(t, fuzzBodyFor(valid, p))
		var r wiretest.Response
		if json.Unmarshal(raw, &r) != nil || r.Error != nil || r.Result == nil {
			t.Fatalf("after params %q: a valid tools/resolve got HTTP %d %s", params, status, raw)
		}
	})
}

// checkResolveReply checks one reply to a tools/resolve request, or to a
// body that is not a JSON-RPC message (decodable false). A result must be
// in the given shape: "extension", "seed" or "any".
func checkResolveReply(status int, raw []byte, decodable bool, params []byte, shape string) error {
	if status >= 500 {
		return fmt.Errorf("HTTP %d: %s", status, raw)
	}
	if len(raw) == 0 || raw[0] != '{' {
		if !decodable && status == http.StatusBadRequest {
			return nil // the SDK answers a body it cannot decode with a plain-text 400
		}
		return fmt.Errorf("HTTP %d with no JSON-RPC response: %q", status, raw)
	}
	var r wiretest.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("HTTP %d, undecodable reply %s: %v", status, raw, err)
	}
	switch {
	case r.Error != nil && r.Result != nil:
		return fmt.Errorf("both result and error: %s", raw)
	case r.Error != nil && len(r.Error.Message)+len(r.Error.Data) > fuzzMaxError:
		return fmt.Errorf("HTTP %d, an error of %d bytes for params of %d: %.300s", status, len(r.Error.Message)+len(r.Error.Data), len(params), raw)
	case r.Error != nil:
		if fuzzCodes[r.Error.Code] {
			return nil
		}
		var members map[string]json.RawMessage
		if fuzzTransportCodes[r.Error.Code] && status == http.StatusBadRequest &&
			json.Unmarshal(params, &members) == nil && members["_meta"] != nil {
			return nil
		}
		return fmt.Errorf("HTTP %d, unexpected error code %d: %s", status, r.Error.Code, raw)
	case r.Result == nil:
		return fmt.Errorf("HTTP %d, neither result nor error: %s", status, raw)
	}
	var res preflight.ResolveResult
	if b, err := json.Marshal(r.Result); err != nil || json.Unmarshal(b, &res) != nil {
		return fmt.Errorf("result does not decode as a ResolveResult: %s", raw)
	}
	if got := map[bool]string{true: "seed", false: "extension"}[res.SeedShape()]; shape != "any" && got != shape {
		return fmt.Errorf("result in the %s shape, negotiated the %s shape: %s", got, shape, raw)
	}
	name := res.Name
	if res.SeedShape() {
		if res.Tool.Tool == nil {
			return fmt.Errorf("seed-shape result without a tool: %s", raw)
		}
		name = res.Tool.Name
	} else if res.ResultType != preflight.ResultTypeComplete || res.Annotations == nil {
		return fmt.Errorf("result in neither shape: %s", raw)
	}
	switch name {
	case filetool.Name, benchGetFile:
		return nil
	}
	return fmt.Errorf("result for %q, which no resolver answers for: %s", name, raw)
}
