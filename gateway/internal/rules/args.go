package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// maxDepth bounds the nesting of arguments the rules read.
const maxDepth = 64

// decode decodes the call's arguments, as untrusted input: a JSON object
// (empty and null mean none) of bounded size and depth, in which no object
// repeats a key. A repeated key is refused because parsers disagree on
// which value wins, and the rules must judge the value the upstream acts
// on.
func (r *Rules) decode(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	if len(raw) > r.maxArgs {
		return nil, fmt.Errorf("the arguments are %d bytes, more than the %d the rules read; resolved to the static declaration", len(raw), r.maxArgs)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidArguments)
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
	}
	keys, depth := scanKeys(raw)
	if depth > maxDepth {
		return nil, fmt.Errorf("the arguments nest %d levels deep, more than the %d the rules read; resolved to the static declaration", depth, maxDepth)
	}
	if keys != countKeys(args) {
		return nil, fmt.Errorf("%w: an object in the arguments repeats a key", ErrInvalidArguments)
	}
	return args, nil
}

// bounded checks arguments decoded already (by the gateway's entry, which
// refuses repeated keys) against the size and nesting the rules read.
func (r *Rules) bounded(raw json.RawMessage) error {
	if len(raw) > r.maxArgs {
		return fmt.Errorf("the arguments are %d bytes, more than the %d the rules read; resolved to the static declaration", len(raw), r.maxArgs)
	}
	if _, depth := scanKeys(raw); depth > maxDepth {
		return fmt.Errorf("the arguments nest %d levels deep, more than the %d the rules read; resolved to the static declaration", depth, maxDepth)
	}
	return nil
}

// scanKeys counts the members of every object in raw, which must be valid
// JSON, and measures its nesting, stopping once it passes maxDepth.
// Compared with the members the decoder kept, the count reveals a repeated
// key however it is escaped.
func scanKeys(raw []byte) (keys, nest int) {
	var isObject, wantKey [maxDepth + 1]bool
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return keys, depth
			}
			nest = max(nest, depth)
			isObject[depth] = raw[i] == '{'
			wantKey[depth] = isObject[depth]
		case '}', ']':
			depth--
		case ',':
			wantKey[depth] = isObject[depth]
		case ':':
			wantKey[depth] = false
		case '"':
			if wantKey[depth] {
				keys++
				wantKey[depth] = false
			}
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		}
	}
	return keys, nest
}

// countKeys counts the members of every object in v.
func countKeys(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		for _, x := range v {
			n += countKeys(x)
		}
		return n
	case []any:
		n := 0
		for _, x := range v {
			n += countKeys(x)
		}
		return n
	}
	return 0
}
