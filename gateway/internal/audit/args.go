package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// a secret by "[REDACTED:kind]"; the strings are scanned together, so that
// a value found in one is replaced in all. It reports false when they could
// not be scanned.
func redactSecrets(v *any) bool {
	var texts []mcp.Content
	walkStrings(v, 0, func(s *string) { texts = append(texts, &mcp.TextContent{Text: *s}) })
	if len(texts) == 0 {
		return true
	}
	r, err := redact.SecretScanner()
	if err != nil {
		return false
	}
	found, ok := r.Find(&mcp.CallToolResult{Content: texts})
	if !ok {
		return false
	}
	if len(found) == 0 {
		return true
	}
	// Longest first, so that a value holding another is replaced whole.
	values := make([]string, 0, len(found))
	for value := range found {
		if redact.Plausible(value) { // else a match that spans a command: kept, as it ran
			values = append(values, value)
		}
	}
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(values))
	for _, value := range values {
		pairs = append(pairs, value, "[REDACTED:"+found[value]+"]")
	}
	replacer := strings.NewReplacer(pairs...)
	walkStrings(v, 0, func(s *string) { *s = replacer.Replace(*s) })
	return true
}

// walkStrings calls f with each string in *v, object keys included,
// within maxArgsDepth.
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
