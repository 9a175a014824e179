package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
)

// Withheld replaces a sensitive argument value in a record.
const Withheld = "[withheld]"

// recordedArgs returns the argument values to record: raw with the values
// of sensitive names replaced by Withheld at any depth and values that
// look like secrets (package redact's detectors: a token in a file's
// content) by "[REDACTED:kind]", or a note when the arguments are too
// large, not a JSON value or could not be checked. Absent arguments are
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
	v = withhold(v, sensitive, 0)
	if !redactSecrets(&v) {
		return note("[omitted: could not be checked for secrets]")
	}
	out, err := json.Marshal(v)
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
			if redact.SensitiveName(k, sensitive) {
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

// redactSecrets replaces, in every string of *v, each value that looks like
// a secret by "[REDACTED:kind]" ([redact.ReplaceSecrets]); a detector's
// match without a secret's form stays, as it ran. It reports false when
// the strings could not be scanned.
func redactSecrets(v *any) bool {
	var texts []string
	walkStrings(v, 0, func(s *string) { texts = append(texts, *s) })
	found, ok := redact.ReplaceSecrets(texts)
	if !ok {
		return false
	}
	i := 0
	walkStrings(v, 0, func(s *string) { *s = found.Texts[i]; i++ })
	return true
}

// walkStrings calls f with each string in *v, object keys included,
// within maxArgsDepth, in an order that depends on *v alone.
func walkStrings(v *any, depth int, f func(*string)) {
	if depth > maxArgsDepth {
		return
	}
	switch e := (*v).(type) {
	case string:
		f(&e)
		*v = e
	case map[string]any:
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the same order on every walk
		for _, k := range keys {
			x := e[k]
			walkStrings(&x, depth+1, f)
			nk := k
			f(&nk)
			if nk != k {
				delete(e, k)
			}
			e[nk] = x
		}
	case []any:
		for i := range e {
			walkStrings(&e[i], depth+1, f)
		}
	}
}
