package entry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/wire"
	segjson "github.com/segmentio/encoding/json"
)

// seeds are messages Parse must read right: attacks, edge cases and legit
// traffic.
var seeds = []string{
	modern,
	benchCall,
	toolsCall(`{"name":"f","arguments":{"action":"read"},"arguments":{"action":"delete"}}`),
	toolsCall(`{"name":"f","arguments":{"action":"read"},"argum\u0065nts":{"action":"delete"}}`),
	toolsCall(`{"name":"f","arguments":{"action":"delete","x":1,"action":"read"}}`),
	toolsCall(`{"name":"f","arguments":{"action":"read"},"Arguments":{"action":"delete"}}`),
	toolsCall(`{"name":"f","Arguments":{"action":"delete"}}`),
	toolsCall(`{"name":"f","arguments":{"ops":[{"op":"read","op":"delete"}]}}`),
	toolsCall(`{"name":"f","arguments":{"kind":1,"\u212aind":2,"ſ":3}}`),
	toolsCall(`{"name":"\ud800"}`),
	toolsCall(`{"name":"\ud83d\ude00","arguments":{"\u0061ction":"read","n":1.50}}`),
	toolsCall(`{"name":"f","arguments":{"s":"a` + "\xff" + `"}}`),
	toolsCall(`{"name":"f","arguments":{"a\u0000":1}}`),
	toolsCall(`{"name":"f","arguments":{"n":1e400,"m":-1e-400,"k":1E+2,"z":-0}}`),
	nested(100),
	nested(101),
	toolsCall(`{"name":"f"}`) + "x",
	`[` + toolsCall(`{}`) + `]`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","Method":"tools/call"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x","_meta":null,"inputResponses":{}}}`,
	`{"result":{"x":1},"id":"r","jsonrpc":"2\u002e0"}`,
	toolsCall(`{"n\u0061me":"f","argum\u0065nts":{"a":1},"\u005fmeta":{"k":1},"requestStat\u0065":"s"}`),
	`{"jsonr\u0070c":"2.0","\u0069d":1,"m\u0065thod":"tools/call","p\u0061rams":{"name":"f"}}`,
	`{"jsonrpc":"2.0","id":"a\/b","method":"tools\/call","params":{"name":"x\"y","requestState":"s\n"}}`,
}

func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// Each input is read as a message, as a call's arguments and as a
		// call's params, so that most inputs reach the differential checks.
		check(t, body)
		check(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f","arguments":`+string(body)+`}}`))
		check(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(body)+`}`))
	})
}

// valueSeeds are arguments and params values.
var valueSeeds = []string{
	`{"action":"read","n":1.50,"list":[{"a":1},{"b":[true,false,null]}]}`,
	`{"\u0061ction":"read","action":"delete"}`,
	`{"name":"f","argum\u0065nts":{"a":1},"_meta":{"progressToken":1},"inputResponses":{},"requestState":"s"}`,
	`{"name":"f","NAME":"g"}`,
	`{"name":"f","Arguments":{}}`,
	`{"k":"\ud83d\ude00\u00e9\n\t\\\/\"","K":1}`,
	`{"n":-0.0e+0,"m":1E400,"o":123456789012345678901234567890e-10}`,
	`{"a":{"b":{"c":{"d":[[[[{"e":"f"}]]]]}}}}`,
	`{"ſ":1,"s":2}`,
	`{"__proto__":{"a":1}}`,
	`[1,"two",{"three":3}]`,
	`"just a string"`,
	`null`,
}

func check(t *testing.T, body []byte) {
	m, err := Parse(body)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if e.Code != -32700 && e.Code != -32600 && e.Code != -32602 {
			t.Errorf("code %d", e.Code)
		}
		if e.Code == -32700 && json.Valid(body) {
			t.Errorf("valid JSON refused as not JSON: %v", e)
		}
		if len(e.Message) >= 1024 || len(e.Member) >= 1024 || !utf8.ValidString(e.Message) || !utf8.ValidString(e.Member) {
			t.Errorf("message of %d bytes: %q", len(e.Message), e.Message)
		}
		if e.ID != nil && (!validID(e.ID) || !bytes.Contains(body, e.ID)) {
			t.Errorf("error id %s", e.ID)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("accepted what json.Valid refuses: %q", body)
	}
	checkReadings(t, body, m)
	checkRequest(t, m)
}

// checkReadings checks that encoding/json, segmentio's decoder as the Go SDK
// sets it up, and a first-member-wins reader all read an accepted message
// as Parse did.
func checkReadings(t *testing.T, body []byte, m *Message) {
	var std any
	if err := json.Unmarshal(body, &std); err != nil {
		t.Fatalf("encoding/json refuses an accepted message: %v", err)
	}
	seg, err := segDecode(body, new(any))
	if err != nil {
		t.Fatalf("segmentio refuses an accepted message: %v", err)
	}
	if !reflect.DeepEqual(std, *seg) {
		t.Fatalf("segmentio reads %#v, encoding/json %#v", *seg, std)
	}
	first, err := firstWins(body)
	if err != nil {
		t.Fatalf("first-wins reader refuses an accepted message: %v", err)
	}
	if !reflect.DeepEqual(std, first) {
		t.Fatalf("first-wins reads %#v, last-wins %#v", first, std)
	}

	obj := std.(map[string]any)
	if method, ok := obj["method"]; ok != (m.Method != "") || ok && method != m.Method {
		t.Errorf("method %q, Parse %q", method, m.Method)
	}
	same(t, "id", obj, "id", m.ID)
	same(t, "params", obj, "params", m.Params)
	same(t, "result", obj, "result", m.Result)
	same(t, "error", obj, "error", m.Error)

	// The envelope as the Go SDK reads it (segmentio, exact names) and as a
	// server using encoding/json reads it (names matched case-insensitively).
	type wire struct {
		VersionTag string          `json:"jsonrpc"`
		ID         any             `json:"id,omitempty"`
		Method     json.RawMessage `json:"method"`
		Params     json.RawMessage `json:"params,omitempty"`
		Result     json.RawMessage `json:"result,omitempty"`
		Error      json.RawMessage `json:"error,omitempty"`
	}
	var sw, jw wire
	if _, err := segDecode(body, &sw); err != nil {
		t.Fatalf("segmentio envelope: %v", err)
	}
	if err := json.Unmarshal(body, &jw); err != nil {
		t.Fatalf("encoding/json envelope: %v", err)
	}
	for _, w := range []wire{sw, jw} {
		var method string
		_ = json.Unmarshal(w.Method, &method)
		if w.VersionTag != "2.0" || method != m.Method || !reflect.DeepEqual(w.ID, obj["id"]) || !equalJSON(w.Params, m.Params) {
			t.Errorf("envelope read as %+v; Parse %+v", w, m)
		}
	}

	params, ok := obj["params"].(map[string]any)
	if !ok {
		if m.HasName || m.HasURI || m.HasRequestState || m.Arguments != nil || m.Meta != nil || m.InputResponses != nil {
			t.Errorf("members found outside an object params: %+v", m)
		}
		return
	}
	str := func(key, got string, has bool) {
		v, ok := params[key].(string)
		if ok != has || v != got {
			t.Errorf("params.%s = %#v; Parse %q, %v", key, params[key], got, has)
		}
	}
	str("name", m.Name, m.HasName)
	str("uri", m.URI, m.HasURI)
	str("requestState", m.RequestState, m.HasRequestState)
	if params["arguments"] == nil {
		if m.Arguments != nil {
			t.Errorf("arguments %s; encoding/json reads none", m.Arguments)
		}
	} else {
		same(t, "params.arguments", params, "arguments", m.Arguments)
	}
	same(t, "params._meta", params, "_meta", m.Meta)
	same(t, "params.inputResponses", params, "inputResponses", m.InputResponses)

	// params as the Go SDK's CallToolParamsRaw reads it, and as the same
	// struct under encoding/json.
	type callToolParamsRaw struct {
		Meta           map[string]any  `json:"_meta,omitempty"`
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}
	var sp, jp callToolParamsRaw
	_, serr := segDecode(m.Params, &sp)
	jerr := json.Unmarshal(m.Params, &jp)
	if (serr == nil) != (jerr == nil) {
		t.Errorf("segmentio and encoding/json disagree on params: %v, %v", serr, jerr)
	}
	_, metaOK := params["_meta"].(map[string]any)
	typesOK := (m.HasName || params["name"] == nil) && (m.HasRequestState || params["requestState"] == nil) &&
		(metaOK || params["_meta"] == nil)
	if typesOK != (serr == nil) {
		t.Errorf("params decode: %v; types as read %v", serr, typesOK)
	}
	if serr != nil {
		return
	}
	var meta map[string]any
	if m.Meta != nil {
		_ = json.Unmarshal(m.Meta, &meta)
	}
	for _, p := range []callToolParamsRaw{sp, jp} {
		if p.Name != m.Name || p.RequestState != m.RequestState || !equalJSON(p.Arguments, m.Arguments) ||
			!equalJSON(p.InputResponses, m.InputResponses) || !reflect.DeepEqual(p.Meta, meta) {
			t.Errorf("params read as %+v; Parse %+v", p, m)
		}
	}

	args, err := m.Args()
	if a, isObj := params["arguments"].(map[string]any); isObj || params["arguments"] == nil {
		if a == nil {
			a = map[string]any{}
		}
		if err != nil || !reflect.DeepEqual(args, a) {
			t.Errorf("Args = %v, %v; want %v", args, err, a)
		}
	} else if err == nil {
		t.Errorf("Args of %s succeeded", m.Arguments)
	}
	canon, err := m.CanonicalArguments()
	if err != nil || !equalJSON(canon, m.Arguments) || !m.KeysEscaped && !bytes.Equal(canon, m.Arguments) {
		t.Errorf("CanonicalArguments = %s, %v; arguments %s", canon, err, m.Arguments)
	}
}

// checkRequest checks that the request built from a parsed one reads the same.
func checkRequest(t *testing.T, m *Message) {
	if m.Method == "" {
		return
	}
	canon, _ := m.CanonicalArguments()
	out := wire.Request(m.ID, m.Method, wire.Params{Name: m.Name, URI: m.URI, Arguments: canon, Meta: m.Meta,
		InputResponses: m.InputResponses, RequestState: m.RequestState})
	r, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(wire.Request(...)) of %s: %v", out, err)
	}
	if !bytes.Equal(r.ID, m.ID) || r.Method != m.Method || r.Name != m.Name || r.URI != m.URI ||
		r.RequestState != m.RequestState || !equalJSON(r.Arguments, m.Arguments) || !equalJSON(r.Meta, m.Meta) ||
		!equalJSON(r.InputResponses, m.InputResponses) {
		t.Errorf("Request = %s\nreads %+v\nwant %+v", out, r, m)
	}
	if again, err := r.CanonicalArguments(); err != nil || !bytes.Equal(again, canon) {
		t.Errorf("CanonicalArguments is not a fixed point: %s, then %s (%v)", canon, again, err)
	}
}

func FuzzRequest(f *testing.F) {
	f.Add(int64(1), "tools/call", "f", "", "", `{"a":1}`, `{"progressToken":1}`)
	f.Add(int64(-1), "x\xff\x01", "\u2028\"\\", "file:///\x00", "s", `{"\u0061":[1,{"b":null}]}`, `null`)
	f.Fuzz(func(t *testing.T, id int64, method, name, uri, state, args, meta string) {
		if method == "" {
			return
		}
		idRaw := json.RawMessage(fmt.Sprint(id))
		if !validID(idRaw) {
			idRaw, _ = json.Marshal(fmt.Sprint(id))
		}
		p := wire.Params{Name: name, URI: uri, RequestState: state}
		if m, err := Parse([]byte(toolsCall(`{"arguments":` + args + `,"_meta":` + meta + `}`))); err == nil {
			p.Arguments, _ = m.CanonicalArguments()
			p.Meta = m.Meta
		}
		out := wire.Request(idRaw, method, p)
		r, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%s): %v", out, err)
		}
		var want struct{ Method, Name, URI, State string }
		b, _ := json.Marshal([]string{method, name, uri, state})
		var ws []string
		_ = json.Unmarshal(b, &ws)
		want.Method, want.Name, want.URI, want.State = ws[0], ws[1], ws[2], ws[3]
		if !bytes.Equal(r.ID, idRaw) || r.Method != want.Method || r.Name != want.Name || r.URI != want.URI ||
			r.RequestState != want.State || !equalJSON(r.Arguments, p.Arguments) || !equalJSON(r.Meta, p.Meta) {
			t.Errorf("Request = %s\nreads %+v", out, r)
		}
		if !json.Valid(out) {
			t.Errorf("Request = %s, not JSON", out)
		}
	})
}

// segDecode decodes as the Go SDK's internal/json does.
func segDecode[T any](b []byte, v *T) (*T, error) {
	dec := segjson.NewDecoder(bytes.NewReader(b))
	dec.DontMatchCaseInsensitiveStructFields()
	return v, dec.Decode(v)
}

// same checks that the member key of obj, as encoding/json read it, is raw.
func same(t *testing.T, what string, obj map[string]any, key string, raw json.RawMessage) {
	t.Helper()
	v, ok := obj[key]
	if ok != (raw != nil) {
		t.Errorf("%s: present %v; Parse %s", what, ok, raw)
		return
	}
	if !ok {
		return
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil || !reflect.DeepEqual(got, v) {
		t.Errorf("%s: encoding/json %#v; Parse %s (%v)", what, v, raw, err)
	}
}

// equalJSON reports whether a and b decode to the same value; absent and
// null are the same.
func equalJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 && json.Unmarshal(a, &x) != nil || len(b) > 0 && json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// firstWins decodes b keeping the first value of a repeated key.
func firstWins(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	v, err := firstValue(dec)
	if err == nil && dec.More() {
		err = errors.New("data after the value")
	}
	return v, err
}

func firstValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		m := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := firstValue(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k.(string)]; !dup {
				m[k.(string)] = v
			}
		}
		_, err = dec.Token()
		return m, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := firstValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// FuzzShallowID: the id a refused message is answered under never panics
// and is either none or a valid id found in the message.
func FuzzShallowID(f *testing.F) {
	f.Add([]byte(`{"id":7,"a":[[[{"b":"}"}]]]}`))
	f.Add([]byte(`{"a":"\"id\"","id":"x"}`))
	f.Add([]byte(`{"id":1,"id":2}`))
	f.Add([]byte(`{"id":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id := shallowID(b)
		if id != nil && (!validID(id) || !bytes.Contains(b, id) || !json.Valid(id)) {
			t.Fatalf("shallowID(%q) = %q", b, id)
		}
	})
}
