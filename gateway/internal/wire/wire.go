// Package wire writes what the gateway sends on the wire, from what it
// judged: the JSON-RPC request a forwarder posts (built from a call's
// members, never from a client's bytes), error responses, and the HTTP
// headers of a 2026-07-28 request that mirror its arguments (x-mcp-header,
// SEP-2243). Package entry reads; package wire writes.
package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// Params are the judged members of a request's params, for Request.
type Params struct {
	Name, URI                       string
	Arguments, Meta, InputResponses json.RawMessage
	RequestState                    string
	// TraceParent and TraceState, when TraceParent is not empty, are the
	// W3C trace context the request carries in _meta, in place of any
	// that Meta has.
	TraceParent, TraceState string
}

// Request builds the JSON-RPC request to forward from what was judged:
// params holds only the members of p that are not empty, in the order name,
// uri, arguments, _meta, inputResponses, requestState. A nil id makes a
// notification. The raw members must be valid JSON, as Parse returns them.
func Request(id json.RawMessage, method string, p Params) []byte {
	n := 64 + len(id) + len(method) + len(p.Name) + len(p.URI) + len(p.Arguments) +
		len(p.Meta) + len(p.InputResponses) + len(p.RequestState) + len(p.TraceParent) + len(p.TraceState)
	b := make([]byte, 0, n+n/8)
	b = append(b, `{"jsonrpc":"2.0"`...)
	if len(id) > 0 {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"method":`...)
	b = AppendString(b, method)
	b = append(b, `,"params":{`...)
	sep := false
	str := func(name, v string) {
		if v == "" {
			return
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, name...)
		b = AppendString(b, v)
	}
	raw := func(name string, v json.RawMessage) {
		if len(v) == 0 {
			return
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, name...)
		b = append(b, v...)
	}
	str(`"name":`, p.Name)
	str(`"uri":`, p.URI)
	raw(`"arguments":`, p.Arguments)
	if p.TraceParent == "" {
		raw(`"_meta":`, p.Meta)
	} else {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = appendTracedMeta(b, p)
	}
	raw(`"inputResponses":`, p.InputResponses)
	str(`"requestState":`, p.RequestState)
	return append(b, "}}"...)
}

// appendTracedMeta appends the _meta member of p: its trace context first,
// then the members of p.Meta other than traceparent and tracestate (in
// any case), so that none is repeated.
func appendTracedMeta(b []byte, p Params) []byte {
	b = append(b, `"_meta":{"traceparent":`...)
	b = AppendString(b, p.TraceParent)
	if p.TraceState != "" {
		b = append(b, `,"tracestate":`...)
		b = AppendString(b, p.TraceState)
	}
	members, _ := rawjson.Members(p.Meta) // judged: an object, or empty
	for _, m := range members {
		// Any spelling of the two is dropped, so that an upstream that
		// matches keys without regard to case (Go's encoding/json) never
		// reads the client's trace context after the gateway's.
		if strings.EqualFold(m.Key, "traceparent") || strings.EqualFold(m.Key, "tracestate") {
			continue
		}
		b = append(b, ',')
		b = AppendString(b, m.Key)
		b = append(b, ':')
		b = append(b, m.Value...)
	}
	return append(b, '}')
}

// AppendString appends s as a JSON string, escaping only what JSON requires;
// invalid UTF-8 becomes U+FFFD, as encoding/json writes it.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if strSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// strSafe reports the bytes that stand for themselves in a JSON string.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// ErrorResponse encodes a JSON-RPC error response to the request id (null
// when empty): the code, message and data of a *jsonrpc.Error, else -32603.
func ErrorResponse(id json.RawMessage, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	e := wireError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		e = wireError{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, e})
	return b
}
