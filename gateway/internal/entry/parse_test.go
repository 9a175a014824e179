package entry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// toolsCall wraps params in a tools/call request.
func toolsCall(params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
}

// nested returns a tools/call whose message nests depth levels in all.
func nested(depth int) string {
	// The message, params and arguments objects are three levels.
	inner := strings.Repeat("[", depth-3) + strings.Repeat("]", depth-3)
	return toolsCall(`{"name":"f","arguments":{"a":` + inner + `}}`)
}

const modern = `{
  "jsonrpc": "2.0",
  "id": "req-7",
  "method": "tools/call",
  "params": {
    "name": "files.read",
    "arguments": {"path": "/etc/hosts", "limit": 10, "opts": {"follow": false, "tags": ["a", "b"]}},
    "_meta": {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
      "io.modelcontextprotocol/clientInfo": {"name": "demo", "version": "1.0.0"},
      "progressToken": 3
    },
    "inputResponses": {"ask-1": {"action": "accept", "content": {"ok": true}}},
    "requestState": "opaque-state"
  }
}`

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		code   int64  // 0: accepted
		member string // checked when not empty
		msg    string // a substring of the message, checked when not empty
	}{
		// Accepted.
		{name: "tools/call", in: toolsCall(`{"name":"f","arguments":{"action":"read"}}`)},
		{name: "modern with _meta", in: modern},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{name: "response", in: `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`},
		{name: "error response", in: `{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}`},
		{name: "response null id", in: `{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"no"}}`},
		{name: "surrogate pair", in: toolsCall(`{"name":"\ud83d\ude00","arguments":{"s":"\uD83D\uDE00"}}`)},
		{name: "escaped key alone", in: toolsCall(`{"name":"f","argum\u0065nts":{"\u0061ction":"read"}}`)},
		{name: "depth 100", in: nested(100)},
		{name: "small number", in: toolsCall(`{"name":"f","arguments":{"n":1e-400,"m":1.7976931348623157e308,"big":123456789012345678901234567890}}`)},
		{name: "whitespace", in: " \t\r\n" + toolsCall(`{ "name" : "f" }`) + " \n"},
		{name: "NUL in a value", in: toolsCall(`{"name":"f","arguments":{"s":"a\u0000b"}}`)},
		{name: "params array", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`},
		{name: "unknown member", in: `{"jsonrpc":"2.0","id":1,"method":"ping","x":{"y":1}}`},
		{name: "distinct non-ASCII keys", in: toolsCall(`{"name":"f","arguments":{"é":1,"e":2,"É́":3}}`)},

		// Not JSON.
		{name: "empty", in: "", code: -32700},
		{name: "trailing garbage", in: toolsCall(`{"name":"f"}`) + "x", code: -32700, msg: "data after the message"},
		{name: "two values", in: toolsCall(`{}`) + toolsCall(`{}`), code: -32700},
		{name: "raw control character", in: toolsCall(`{"name":"a` + "\n" + `"}`), code: -32700, msg: "control character"},
		{name: "trailing comma", in: toolsCall(`{"name":"f",}`), code: -32700},
		{name: "bad escape", in: toolsCall(`{"name":"\x"}`), code: -32700, msg: "invalid escape"},
		{name: "short unicode escape", in: toolsCall(`{"name":"\u12"}`), code: -32700},
		{name: "leading zero", in: toolsCall(`{"name":"f","arguments":{"n":01}}`), code: -32700},
		{name: "bare dot", in: toolsCall(`{"name":"f","arguments":{"n":1.}}`), code: -32700},
		{name: "unterminated", in: `{"jsonrpc":"2.0","id":1,"method":"x`, code: -32700},
		{name: "BOM", in: "\ufeff" + toolsCall(`{}`), code: -32700},
		{name: "single quotes", in: `{'jsonrpc':'2.0'}`, code: -32700},
		{name: "NaN", in: toolsCall(`{"name":"f","arguments":{"n":NaN}}`), code: -32700},

		// Not a JSON-RPC message.
		{name: "batch", in: `[` + toolsCall(`{}`) + `]`, code: -32600, msg: "batches are not supported"},
		{name: "empty batch", in: `[]`, code: -32600, msg: "batches"},
		{name: "string", in: `"hello"`, code: -32600, msg: "must be a JSON object"},
		{name: "no jsonrpc", in: `{"id":1,"method":"ping"}`, code: -32600, member: "jsonrpc"},
		{name: "jsonrpc 1.0", in: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, code: -32600, member: "jsonrpc"},
		{name: "jsonrpc number", in: `{"jsonrpc":2.0,"id":1,"method":"ping"}`, code: -32600, member: "jsonrpc"},
		{name: "id object", in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, code: -32600, member: "id"},
		{name: "id null on request", in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: -32600, member: "id"},
		{name: "id fraction", in: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, code: -32600, member: "id"},
		{name: "id exponent", in: `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, code: -32600, member: "id"},
		{name: "id too big", in: `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, code: -32600, member: "id"},
		{name: "id minus zero", in: `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, code: -32600, member: "id"},
		{name: "method number", in: `{"jsonrpc":"2.0","id":1,"method":3}`, code: -32600, member: "method"},
		{name: "method empty", in: `{"jsonrpc":"2.0","id":1,"method":""}`, code: -32600, member: "method"},
		{name: "method null", in: `{"jsonrpc":"2.0","id":1,"method":null}`, code: -32600, member: "method"},
		{name: "no method no result", in: `{"jsonrpc":"2.0","id":1}`, code: -32600},
		{name: "method and result", in: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, code: -32600},
		{name: "result and error", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, code: -32600},
		{name: "response without id", in: `{"jsonrpc":"2.0","result":{}}`, code: -32600, member: "id"},
		{name: "params string", in: `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, code: -32600, member: "params"},
		{name: "too large", in: toolsCall(`{"name":"` + strings.Repeat("a", MaxBytes) + `"}`), code: -32600, msg: "larger than"},

		// Ambiguous in the envelope.
		{name: "repeated traceparent in _meta", in: toolsCall(`{"name":"f","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","traceparent":"00-11111111111111111111111111111111-2222222222222222-01"}}`),
			code: -32602, member: "params._meta.traceparent", msg: `repeated member "traceparent"`},
		{name: "escaped tracestate beside tracestate", in: toolsCall(`{"name":"f","_meta":{"tracestate":"a=1","tr\u0061cestate":"a=2"}}`), code: -32602, member: "params._meta.tracestate"},
		{name: "repeated params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`,
			code: -32600, member: "params", msg: `repeated member "params"`},
		{name: "repeated method", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, code: -32600, member: "method"},
		{name: "repeated id", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, code: -32600, member: "id"},
		{name: "escaped method key", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","m\u0065thod":"tools/call"}`, code: -32600, member: "method"},
		{name: "Method beside method", in: `{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call"}`, code: -32600, msg: "differ only in case"},
		{name: "Params alone", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"f"}}`, code: -32600, member: "Params", msg: `spell it "params"`},
		{name: "long s params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"f"}}`, code: -32600, msg: "differs only in case"},
		{name: "lone surrogate in method", in: `{"jsonrpc":"2.0","id":1,"method":"\ud800"}`, code: -32600, member: "method"},

		// Ambiguous inside params.
		{name: "repeated arguments", in: toolsCall(`{"name":"f","arguments":{"action":"read"},"arguments":{"action":"delete"}}`),
			code: -32602, member: "params.arguments", msg: `repeated member "arguments" in params: a request must have one reading`},
		{name: "escaped arguments key", in: toolsCall(`{"name":"f","arguments":{"action":"read"},"argum\u0065nts":{"action":"delete"}}`),
			code: -32602, member: "params.arguments", msg: `repeated member "arguments" in params`},
		{name: "repeated name", in: toolsCall(`{"name":"read","name":"delete"}`), code: -32602, member: "params.name"},
		{name: "Arguments beside arguments", in: toolsCall(`{"name":"f","arguments":{},"Arguments":{"action":"delete"}}`),
			code: -32602, member: "params.arguments", msg: "differ only in case"},
		{name: "Arguments alone", in: toolsCall(`{"name":"f","Arguments":{"action":"delete"}}`), code: -32602, member: "params.Arguments"},
		{name: "NAME alone", in: toolsCall(`{"NAME":"f"}`), code: -32602, member: "params.NAME"},
		{name: "Kelvin in a key", in: toolsCall(`{"name":"f","arguments":{"kind":1,"\u212aind":2}}`), code: -32602, msg: "differ only in case"},
		{name: "repeated deep", in: toolsCall(`{"name":"f","arguments":{"action":"delete","x":1,"action":"read"}}`),
			code: -32602, member: "params.arguments.action", msg: `repeated member "action" in params.arguments`},
		{name: "case fold deep", in: toolsCall(`{"name":"f","arguments":{"action":"read","Action":"delete"}}`),
			code: -32602, member: "params.arguments.action", msg: `params.arguments.action: keys "action" and "Action" differ only in case; rename one`},
		{name: "in array of objects", in: toolsCall(`{"name":"f","arguments":{"ops":[{"a":1},{"op":"read","op":"delete"}]}}`),
			code: -32602, member: "params.arguments.ops[1].op"},
		{name: "escaped in array", in: toolsCall(`{"name":"f","arguments":{"ops":[[{"op":"read","\u006fp":"delete"}]]}}`),
			code: -32602, member: "params.arguments.ops[0][0].op", msg: "escapes"},
		{name: "repeated _meta member", in: toolsCall(`{"name":"f","_meta":{"progressToken":1,"progressToken":2}}`),
			code: -32602, member: "params._meta.progressToken"},
		{name: "lone high surrogate", in: toolsCall(`{"name":"f","arguments":{"s":"\ud800"}}`), code: -32602, member: "params.arguments.s", msg: "surrogate"},
		{name: "lone low surrogate", in: toolsCall(`{"name":"f","arguments":{"s":"\udc00x"}}`), code: -32602, msg: "surrogate"},
		{name: "reversed pair", in: toolsCall(`{"name":"f","arguments":{"s":"\ude00\ud83d"}}`), code: -32602, msg: "surrogate"},
		{name: "high then escape", in: toolsCall(`{"name":"f","arguments":{"s":"\ud83d\n"}}`), code: -32602, msg: "surrogate"},
		{name: "lone surrogate in key", in: toolsCall(`{"name":"f","arguments":{"\ud800":1}}`), code: -32602, member: "params.arguments", msg: "key has"},
		{name: "invalid UTF-8 value", in: toolsCall(`{"name":"f","arguments":{"s":"a` + "\xff" + `"}}`), code: -32602, member: "params.arguments.s", msg: "UTF-8"},
		{name: "invalid UTF-8 key", in: toolsCall(`{"name":"f","arguments":{"a` + "\xc3" + `":1}}`), code: -32602, msg: "UTF-8"},
		{name: "encoded surrogate", in: toolsCall(`{"name":"f","arguments":{"s":"` + "\xed\xa0\x80" + `"}}`), code: -32602, msg: "UTF-8"},
		{name: "NUL key", in: toolsCall(`{"name":"f","arguments":{"a\u0000":1}}`), code: -32602, msg: "NUL"},
		{name: "__proto__", in: toolsCall(`{"name":"f","arguments":{"x":[{"\u005f_proto__":{"action":"delete"}}]}}`), code: -32602, member: "params.arguments.x[0].__proto__"},
		{name: "overflow", in: toolsCall(`{"name":"f","arguments":{"n":1e400}}`), code: -32602, member: "params.arguments.n", msg: "1e400"},
		{name: "negative overflow", in: toolsCall(`{"name":"f","arguments":{"n":[-1.8e308]}}`), code: -32602, member: "params.arguments.n[0]"},
		{name: "long overflow", in: toolsCall(`{"name":"f","arguments":{"n":1` + strings.Repeat("0", 309) + `}}`), code: -32602, msg: "…"},
		{name: "depth 101", in: nested(101), code: -32602, msg: "nesting deeper than 100"},
		{name: "name not a string is kept out", in: toolsCall(`{"name":"\ud800"}`), code: -32602, member: "params.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(tt.in))
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !bytes.Equal(m.Body, []byte(tt.in)) {
					t.Error("Body is not the input")
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("accepted %q; want code %d", tt.in, tt.code)
			}
			if e.Code != tt.code {
				t.Errorf("code = %d, want %d (%s)", e.Code, tt.code, e.Message)
			}
			if tt.member != "" && e.Member != tt.member {
				t.Errorf("member = %q, want %q (%s)", e.Member, tt.member, e.Message)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message = %q, want it to hold %q", e.Message, tt.msg)
			}
			if len(e.Message) >= 1024 || !utf8.ValidString(e.Message) || !utf8.ValidString(e.Member) {
				t.Errorf("message too long or not UTF-8: %q", e.Message)
			}
		})
	}
}

func TestParseMembers(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(modern))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ID":             `"req-7"`,
		"Arguments":      `{"path": "/etc/hosts", "limit": 10, "opts": {"follow": false, "tags": ["a", "b"]}}`,
		"InputResponses": `{"ask-1": {"action": "accept", "content": {"ok": true}}}`,
	}
	got := map[string]string{"ID": string(m.ID), "Arguments": string(m.Arguments), "InputResponses": string(m.InputResponses)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members = %q, want %q", got, want)
	}
	if m.Method != "tools/call" || m.Name != "files.read" || !m.HasName || m.HasURI ||
		m.RequestState != "opaque-state" || !m.HasRequestState || m.KeysEscaped {
		t.Errorf("message = %+v", m)
	}
	var meta map[string]any
	if err := json.Unmarshal(m.Meta, &meta); err != nil || meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" || len(meta) != 4 {
		t.Errorf("_meta = %s (%v)", m.Meta, err)
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(m.Params, &params); err != nil || len(params) != 5 {
		t.Errorf("params = %s (%v)", m.Params, err)
	}
	args, err := m.Args()
	if err != nil || args["limit"] != 10.0 || args["path"] != "/etc/hosts" {
		t.Errorf("Args = %v, %v", args, err)
	}
	if again, _ := m.Args(); reflect.ValueOf(again).Pointer() != reflect.ValueOf(args).Pointer() {
		t.Error("Args decoded twice")
	}

	m, err = Parse([]byte(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x","arguments":null,"name":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.URI != "file:///x" || !m.HasURI || m.HasName || m.Arguments != nil || m.Meta != nil {
		t.Errorf("resources/read = %+v", m)
	}
	if args, err := m.Args(); err != nil || args == nil || len(args) != 0 {
		t.Errorf("Args of no arguments = %v, %v", args, err)
	}

	m, err = Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`))
	if err != nil || m.ID != nil || m.Method != "notifications/progress" || m.HasName {
		t.Errorf("notification = %+v, %v", m, err)
	}
	m, err = Parse([]byte(`{"result":{"x":1},"id":"r","jsonrpc":"2\u002e0"}`))
	if err != nil || m.Method != "" || string(m.Result) != `{"x":1}` || m.Error != nil || string(m.ID) != `"r"` {
		t.Errorf("response = %+v, %v", m, err)
	}
	m, err = Parse([]byte(toolsCall(`{"name":"f","arguments":[1]}`)))
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := m.Args(); !errors.As(err, &e) || e.Code != -32602 || e.Message != "params.arguments must be a JSON object" || string(e.ID) != "1" {
		t.Errorf("Args of an array = %v", err)
	}
}

func TestErrorID(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, id string }{
		{`{"method":"tools/call","params":{"name":"a","name":"b"},"jsonrpc":"2.0","id":"late"}`, `"late"`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"s":"\ud800"}}}`, `7`},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, `7`},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","Id":2,"method":"ping","id":1}`, ``},
		{`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":1e999,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, ``}, // not JSON
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%s) accepted", tt.in)
			continue
		}
		if string(e.ID) != tt.id {
			t.Errorf("Parse(%s).ID = %s, want %s", tt.in, e.ID, tt.id)
		}
	}
}

// TestClip checks that messages stay short whatever the client wrote.
func TestClip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100)
	ctl := strings.Repeat(`\u0001`, 100)
	deep := strings.Repeat(`{"`+long+`":`, 97) + `{"a":1,"a":2}` + strings.Repeat("}", 97)
	for _, in := range []string{
		toolsCall(`{"name":"f","arguments":{"` + long + `":1,"` + long + `":2}}`),
		toolsCall(`{"name":"f","arguments":{"` + ctl + `":1,"` + ctl + `":2}}`),
		toolsCall(`{"name":"f","arguments":{"` + ctl + `x":1,"` + ctl + `X":2}}`),
		toolsCall(`{"name":"f","arguments":` + deep + `}`),
		toolsCall(`{"name":"f","arguments":{"n":-` + strings.Repeat("9", 500) + `}}`),
		toolsCall(`{"name":"f","arguments":{"` + long + `":` + strings.Repeat("[", 200) + `}}`),
	} {
		_, err := Parse([]byte(in))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("accepted")
		}
		if len(e.Message) >= 1024 || !utf8.ValidString(e.Message) || strings.Contains(e.Message, "\x01") {
			t.Errorf("message (%d bytes): %q", len(e.Message), e.Message)
		}
		if strings.Contains(e.Message, strings.Repeat("é", 33)) {
			t.Errorf("key not clipped: %q", e.Message)
		}
	}
	if got := show([]byte(long), true); got != `"`+strings.Repeat("é", 32)+`…"` {
		t.Errorf("show = %q", got)
	}
}

func TestCanonicalArguments(t *testing.T) {
	t.Parallel()
	tests := []struct{ params, want string }{
		{`{"name":"f","arguments":{"\u0061ction":"read","n":1.50}}`, `{"action":"read","n":1.50}`},
		{`{"name":"f","arguments":{"action":"r\u0065ad"}}`, `{"action":"r\u0065ad"}`},
		{`{"name":"f","arguments":{ "a\"b\u00e9" : {"x\/y":["\u0041"]} , "k\n":1}}`, `{ "a\"bé" : {"x/y":["\u0041"]} , "k\n":1}`},
		{`{"name":"f","arguments":{"\ud83d\ude00":"\\"}}`, `{"😀":"\\"}`},
		{`{"name":"f"}`, ``},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(toolsCall(tt.params)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.CanonicalArguments()
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalArguments(%s) = %s, %v; want %s", tt.params, got, err, tt.want)
		}
		if got == nil {
			continue
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(m.Arguments, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("CanonicalArguments(%s) changed the value", tt.params)
		}
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(modern))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := m.CanonicalArguments()
	out := wire.Request(m.ID, m.Method, wire.Params{Name: m.Name, Arguments: args, Meta: m.Meta, InputResponses: m.InputResponses, RequestState: m.RequestState})
	var got struct {
		JSONRPC string
		ID      string
		Method  string
		Params  struct {
			Name           string
			Arguments      map[string]any
			Meta           map[string]any `json:"_meta"`
			InputResponses map[string]any
			RequestState   string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Arguments, Meta, InputResponses map[string]any
	}
	_ = json.Unmarshal(m.Arguments, &want.Arguments)
	_ = json.Unmarshal(m.Meta, &want.Meta)
	_ = json.Unmarshal(m.InputResponses, &want.InputResponses)
	if got.JSONRPC != "2.0" || got.ID != "req-7" || got.Method != "tools/call" || got.Params.Name != "files.read" ||
		got.Params.RequestState != "opaque-state" || !reflect.DeepEqual(got.Params.Arguments, want.Arguments) ||
		!reflect.DeepEqual(got.Params.Meta, want.Meta) || !reflect.DeepEqual(got.Params.InputResponses, want.InputResponses) {
		t.Errorf("Request = %s", out)
	}
	again, err := Parse(out)
	if err != nil || again.Name != m.Name || !bytes.Equal(again.Arguments, args) || !bytes.Equal(again.Meta, m.Meta) {
		t.Errorf("Parse(Request) = %+v, %v", again, err)
	}

	for _, tt := range []struct {
		id     json.RawMessage
		method string
		p      wire.Params
		want   string
	}{
		{nil, "notifications/initialized", wire.Params{}, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`},
		{json.RawMessage(`3`), "resources/read", wire.Params{URI: "file:///a\"b"}, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///a\"b"}}`},
		{json.RawMessage(`"x"`), "tools/call", wire.Params{Name: "a\x01\xff", Arguments: json.RawMessage(`{}`)},
			`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a\u0001\ufffd","arguments":{}}}`},
	} {
		if got := string(wire.Request(tt.id, tt.method, tt.p)); got != tt.want {
			t.Errorf("Request = %s, want %s", got, tt.want)
		}
	}
}

// TestConcurrent checks that Parse can be called from many goroutines.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	want := make([]string, len(seeds))
	for i, s := range seeds {
		m, err := Parse([]byte(s))
		want[i] = fmt.Sprintf("%+v %v", m, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for i, s := range seeds {
					m, err := Parse([]byte(s))
					if got := fmt.Sprintf("%+v %v", m, err); got != want[i] {
						t.Errorf("Parse(%.40s) = %s, want %s", s, got, want[i])
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestFoldMap checks large objects, where keys are compared through a map.
func TestFoldMap(t *testing.T) {
	t.Parallel()
	var keys []string
	for i := range 40 {
		keys = append(keys, `"k`+string(rune('a'+i%26))+strings.Repeat("x", i/26)+`":1`)
	}
	obj := "{" + strings.Join(keys, ",") + "}"
	if _, err := Parse([]byte(toolsCall(`{"name":"f","arguments":` + obj + `}`))); err != nil {
		t.Fatalf("40 distinct keys: %v", err)
	}
	for _, extra := range []string{`"kc":2`, `"KC":2`, `"k\u0063":2`, `"\u212ac":2`, `"kſ":1,"KS":2`} {
		in := toolsCall(`{"name":"f","arguments":{"o":[` + obj[:len(obj)-1] + "," + extra + `}]}}`)
		_, err := Parse([]byte(in))
		var e *Error
		if !errors.As(err, &e) || e.Code != -32602 || !strings.HasPrefix(e.Member, "params.arguments.o[0].") {
			t.Errorf("extra %s: %v", extra, err)
		}
	}
	// Sibling objects reuse the map.
	if _, err := Parse([]byte(toolsCall(`{"name":"f","arguments":[` + obj + "," + obj + `]}`))); err != nil {
		t.Errorf("two large siblings: %v", err)
	}
}

func TestFoldKey(t *testing.T) {
	t.Parallel()
	pairs := []string{"a", "A", "k", "K", "\u212a", "s", "S", "ſ", "é", "É", "ß", "ẞ", "σ", "ς", "Σ", "1", "_", "ǅ", "ǆ", "Ǆ"}
	for _, a := range pairs {
		for _, b := range pairs {
			if got, want := string(foldKey(nil, []byte(a))) == string(foldKey(nil, []byte(b))), strings.EqualFold(a, b); got != want {
				t.Errorf("fold %q %q = %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}

// TestNoAllocs checks that a typical call allocates only the Message and
// the name, with a scanner reused as Parse reuses its pool's (the pool
// itself drops items at random under the race detector). The scanner is
// reset, not released: in the pool once per run, Parse calls running in
// parallel would share it.
func TestNoAllocs(t *testing.T) {
	// Not parallel: it counts allocations.
	body := []byte(benchCall)
	s := new(scanner)
	n := testing.AllocsPerRun(100, func() {
		if _, err := s.parse(body); err != nil {
			t.Fatal(err)
		}
		s.reset()
	})
	if n > 2 {
		t.Errorf("Parse allocates %v times, want at most 2", n)
	}
}

const benchCall = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_issues","arguments":{"query":"is:open label:bug repo:example/widgets","sort":"updated","order":"desc","per_page":25,"page":1,"include":["labels","assignees"],"filters":{"author":"octo","since":"2026-01-01T00:00:00Z","state":"open"}},"_meta":{"progressToken":"tok-42","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"demo-client","version":"1.4.2"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{}}}}}`

func BenchmarkParse(b *testing.B) {
	var items []string
	for i := range 33 {
		items = append(items, `{"id":`+string(rune('0'+i%10))+`,"title":"Widget \u00e9dition number `+strings.Repeat("x", i%7)+`","tags":["alpha","beta","gamma"],"score":12.5e-1,"ok":true,"note":null}`)
	}
	big := `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"bulk_update","arguments":{"items":[` + strings.Join(items, ",") + `]},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	for _, bc := range []struct {
		name string
		body string
	}{{"500B", benchCall}, {"4KB", big}} {
		body := []byte(bc.body)
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.Logf("%d bytes", len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeepNestingKeepsTheID: a message refused for nesting too deep is
// answered under its id when it has exactly one, so that a client over
// stdio is not left waiting; with two ids, or an id folded, none.
func TestDeepNestingKeepsTheID(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	for _, tc := range []struct {
		body, id string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f","arguments":` + deep + `}}`, "7"},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"f","arguments":` + deep + `},"id":"x-1"}`, `"x-1"`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f","arguments":` + deep + `},"id":8}`, ""},
		{`{"jsonrpc":"2.0","ID":7,"method":"tools/call","params":{"name":"f","arguments":` + deep + `},"id":8}`, ""},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":` + deep + `}`, ""},
	} {
		_, err := Parse([]byte(tc.body))
		e, ok := err.(*Error)
		if !ok || e.Code != codeInvalidParams && e.Code != codeInvalidRequest {
			t.Fatalf("%.60s...: %v", tc.body, err)
		}
		if string(e.ID) != tc.id {
			t.Errorf("%.60s...: id %s, want %q", tc.body, e.ID, tc.id)
		}
	}
}

// BenchmarkReencode measures what forwarding what was judged costs on the
// passthrough: the request built from the judged members (wire.Request),
// beside reading it (BenchmarkParse).
func BenchmarkReencode(b *testing.B) {
	m, err := Parse([]byte(benchCall))
	if err != nil {
		b.Fatal(err)
	}
	args, err := m.CanonicalArguments()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchCall)))
	b.ReportAllocs()
	for b.Loop() {
		_ = wire.Request(json.RawMessage("1"), m.Method, wire.Params{Name: "search_issues", Arguments: args, Meta: m.Meta})
	}
}
