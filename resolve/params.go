package resolve

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/preflightmcp/preflight"
)

// resolveParams are the params of tools/resolve as the server decodes
// them. Decoding never fails: params that do not fit are recorded in
// problem and answered with -32602 and a short message naming the field,
// never with an echo of the params (the SDK quotes params it cannot decode
// in full in its error message).
type resolveParams struct {
	preflight.ResolveParams
	problem string
}

// UnmarshalJSON reads the members of tools/resolve by their exact names,
// as the SDK does, and ignores the others.
func (p *resolveParams) UnmarshalJSON(b []byte) error {
	*p = resolveParams{}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		p.problem = `params must be an object: send {"name": TOOL, "arguments": {...}}, not ` + jsonKind(b)
		return nil
	}
	if raw, ok := members["_meta"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &p.Meta); err != nil {
			p.problem = "params._meta must be an object, not " + jsonKind(raw)
			return nil
		}
	}
	if raw, ok := members["name"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &p.Name); err != nil {
			p.problem = "params.name must be a string (the name of a tool from tools/list), not " + jsonKind(raw)
			return nil
		}
	}
	if raw, ok := members["arguments"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &p.Arguments); err != nil {
			p.problem = "params.arguments must be an object (the complete arguments of the intended call), not " + jsonKind(raw)
			return nil
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// jsonKind names the kind of a JSON value, for messages that must not
// repeat the value itself.
func jsonKind(raw json.RawMessage) string {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return "an object"
		case '[':
			return "an array"
		case '"':
			return "a string"
		case 't', 'f':
			return "a boolean"
		case 'n':
			return "null"
		}
		return "a number"
	}
	return "nothing"
}

// clip returns s cut to at most n bytes, on a rune boundary, with "…" in
// place of what was cut: error messages name what the client sent without
// repeating all of it.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
