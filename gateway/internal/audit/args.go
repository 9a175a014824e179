package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Withheld replaces a sensitive argument value in a record.
const Withheld = "[withheld]"

// credentialWords mark argument names whose values are never recorded:
// a name containing one of them (ignoring case, "-" and "_") is withheld.
var credentialWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "authorization",
	"credential", "cookie", "privatekey", "accesskey", "clientsecret", "sessionkey", "otp"}

// sensitiveName reports whether an argument called name is withheld.
func sensitiveName(name string, listed []string) bool {
	if slices.Contains(listed, name) {
		return true
	}
	folded := strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(name))
	for _, w := range credentialWords {
		if w == "otp" {
			if folded == w {
				return true
			}
			continue
		}
		if strings.Contains(folded, w) {
			return true
		}
	}
	return false
}

// recordedArgs returns the argument values to record: raw with the values
// of sensitive names replaced by Withheld at any depth, or a note when
// the arguments are too large or not a JSON value. Absent arguments are
// nil.
func recordedArgs(raw json.RawMessage, sensitive []string, maxBytes int) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(raw) > maxBytes {
		return note(fmt.Sprintf("[omitted: %d bytes, over the %d-byte limit]", len(raw), maxBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return note("[omitted: not valid JSON]")
	}
	out, err := json.Marshal(withhold(v, sensitive, 0))
	if err != nil {
		return note("[omitted: not valid JSON]")
	}
	return out
}

func note(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// maxArgsDepth bounds the walk; deeper values are withheld whole.
const maxArgsDepth = 64

func withhold(v any, sensitive []string, depth int) any {
	if depth > maxArgsDepth {
		return Withheld
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if sensitiveName(k, sensitive) {
				v[k] = Withheld
			} else {
				v[k] = withhold(e, sensitive, depth+1)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = withhold(e, sensitive, depth+1)
		}
	}
	return v
}
