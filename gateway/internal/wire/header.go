package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// paramPrefix starts the headers that mirror arguments (x-mcp-header,
// SEP-2243).
const paramPrefix = "Mcp-Param-"

// binding is an argument, by its path in the arguments, that a header
// mirrors.
type binding struct {
	path   []string
	header string // canonical, with the prefix
}

// bindings returns the x-mcp-header bindings of a tool's input schema.
func bindings(tool *mcp.Tool) []binding {
	if tool == nil || tool.InputSchema == nil {
		return nil
	}
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return nil
	}
	var s schemaProps
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return s.collect(nil, nil)
}

type schemaProps struct {
	Properties map[string]schemaProps `json:"properties"`
	Header     *string                `json:"x-mcp-header"`
}

func (s schemaProps) collect(prefix []string, out []binding) []binding {
	for name, p := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		if p.Header != nil && *p.Header != "" {
			out = append(out, binding{path: path, header: http.CanonicalHeaderKey(paramPrefix + *p.Header)})
		}
		out = p.collect(path, out)
	}
	return out
}

// argument returns the primitive value at path in args (string, bool or
// an integer within the safe range), and whether there is one.
func argument(args json.RawMessage, path []string) (any, bool) {
	cur := args
	for _, part := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		v, ok := obj[part]
		if !ok {
			return nil, false
		}
		cur = v
	}
	var v any
	if json.Unmarshal(cur, &v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string, bool:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53-1 {
			return int64(v), true
		}
	}
	return nil, false
}

// headerValue encodes an argument as its header value: printable ASCII
// as it is, anything else as =?base64?...?=.
func headerValue(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	plain := s == "" || s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t'
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// decodeHeader decodes a header value that may be =?base64?...?=.
func decodeHeader(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			b, err := base64.StdEncoding.DecodeString(enc)
			return string(b), err == nil
		}
	}
	return v, true
}

// Mismatch is the error of headers that do not match the body: -32020,
// which the SDK's server answers with HTTP 400.
func Mismatch(format string, args ...any) error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: " + fmt.Sprintf(format, args...)}
}

// CheckParamHeaders checks the Mcp-Param headers of a call of tool with
// args: every one present once, each that mirrors an argument of tool
// (its x-mcp-header) equal to that argument, and present when the argument
// is; -32020 otherwise.
func CheckParamHeaders(h http.Header, tool *mcp.Tool, args json.RawMessage) error {
	for k, vs := range h {
		if strings.HasPrefix(k, paramPrefix) && len(vs) > 1 {
			return Mismatch("%s is repeated; send it once", k)
		}
	}
	for _, b := range bindings(tool) {
		got := h.Get(b.header)
		v, ok := argument(args, b.path)
		switch {
		case !ok && got != "":
			return Mismatch("%s is sent for argument %q, which the body does not give as a string, boolean or integer", b.header, strings.Join(b.path, "."))
		case !ok:
			continue
		case got == "":
			return Mismatch("%s is missing for argument %q", b.header, strings.Join(b.path, "."))
		}
		dec, okd := decodeHeader(got)
		if want, _ := decodeHeader(headerValue(v)); !okd || dec != want {
			return Mismatch("%s does not match argument %q of the body", b.header, strings.Join(b.path, "."))
		}
	}
	return nil
}

// ParamHeaders returns the Mcp-Param headers of a call of tool with args,
// made from the arguments as judged: one for each argument the tool's
// schema mirrors in a header.
func ParamHeaders(tool *mcp.Tool, args json.RawMessage) http.Header {
	var h http.Header
	for _, b := range bindings(tool) {
		if v, ok := argument(args, b.path); ok {
			if h == nil {
				h = http.Header{}
			}
			h[b.header] = []string{headerValue(v)}
		}
	}
	return h
}
