package redact

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/hints"
)

// FuzzResult redacts a text block and structured content taken from the
// input: it never panics, never modifies its input, leaves none of the
// values it detected in the input in its output (in any JSON form), and
// redacting its output again changes nothing.
func FuzzResult(f *testing.F) {
	issue, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(issue), issue)
	for _, s := range secretSamples() {
		f.Add(s.text, []byte(`{"v": `+marshal(f, s.text)+`}`))
	}
	for _, s := range []string{
		"jane.doe@example.com +44 20 7946 0958 4111 1111 1111 1111 DE89 3704 0044 0532 0130 00 123-45-6789 10.0.0.1",
		`{"body": "line\njane@example.com", "pan": 4111111111111111}`,
		"https://user:ghp_" + token(8, alnum, 36) + "@github.com/o/r",
		"password = \"" + token(9, alnum, 12) + "\"\n[REDACTED:email] [REDACTED:",
		"K\u212Aey = " + token(10, alnum, 20),
	} {
		f.Add(s, []byte(`["`+strings.ReplaceAll(s, `"`, `\"`)+`", 5555555555554444]`))
	}
	r := newRedactor(f, &Options{Kinds: append(DefaultKinds(), IPv4)})
	f.Fuzz(func(t *testing.T, text string, structured []byte) {
		res := textResult(text)
		if json.Valid(structured) {
			dec := json.NewDecoder(bytes.NewReader(structured))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil && v != nil {
				res.StructuredContent = v
			}
		}
		before := marshal(t, res)
		out, rep := r.Result(res, hints.SensitivityConfidential)
		if marshal(t, res) != before {
			t.Fatal("the input was modified")
		}
		if out == nil {
			t.Fatal("nil result")
		}
		if !rep.Withheld {
			values := map[string]string{}
			docs, _, _ := collect(res)
			budget := 1 << 30
			r.detect(docs, values, &budget)
			dropCovered(values)
			outDocs, _, _ := collect(out)
			for v, k := range values {
				if containsValue(outDocs, v) {
					t.Errorf("the %s %q survived in %s", k, v, marshal(t, out))
				}
			}
		}
		again, rep2 := r.Result(out, hints.SensitivityConfidential)
		if a, b := marshal(t, again), marshal(t, out); a != b || rep2.Redacted() {
			t.Errorf("redacting twice differs from once:\n once  %s\n twice %s", b, a)
		}
	})
}

// FuzzRenderJSON checks that reading a JSON text without decoding it
// renders what decoding it and rendering the value does, and accepts the
// JSON objects and arrays that encoding/json accepts (strings that are
// not UTF-8 aside: they are read as plain text).
func FuzzRenderJSON(f *testing.F) {
	issue, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(issue),
		`{"b": [1, 2.5e-3, {"z": null, "a": true}], "a": "x\ny\u00e9\ud83d\ude00\ud800"}`,
		`[["deep"], {"k": [["v"]]}, "s", -0, 1E+2]`,
		`{"k": "a", "k": "b"}`,
		`{"": [1, "x"], "a": {"": ["y"]}}`,
		`{} `, ` [ ] `, `{"a":}`, `[1,]`, `"str"`, `{"a":"\u00"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := renderJSON(s)
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		valid := json.Valid([]byte(s)) && dec.Decode(&v) == nil
		switch v.(type) {
		case map[string]any, []any:
		default:
			valid = false
		}
		if ok && !valid {
			t.Fatalf("renderJSON accepted %q, which is not a JSON object or array", s)
		}
		if !ok {
			if valid && utf8.ValidString(s) && !strings.Contains(s, `\ud`) && !strings.Contains(s, `\uD`) {
				t.Fatalf("renderJSON refused %q", s)
			}
			return
		}
		if duplicateKeys(s) {
			return
		}
		var r renderer
		r.value("", v)
		want := doc{text: r.b.String(), pieces: r.pieces}
		// The same lines and strings, in the document's order of keys.
		if d.lines() != want.lines() || len(d.text) != len(want.text) {
			t.Fatalf("rendering of %q:\n got  %q\n want %q (in some order)", s, d.text, want.text)
		}
		if got, want := pieceStrings(d), pieceStrings(want); !slices.Equal(got, want) {
			t.Fatalf("pieces of %q: %q, want %q", s, got, want)
		}
	})
}

func pieceStrings(d doc) []string {
	var out []string
	for _, p := range d.pieces {
		out = append(out, d.text[p.start:p.end])
	}
	slices.Sort(out)
	return out
}

// duplicateKeys reports whether some object of the JSON text s has a key
// twice (decoding keeps the last; rendering the text keeps both).
func duplicateKeys(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: tok == '{', keys: map[string]bool{}, key: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.keys[tok] {
					return true
				}
				top.keys[tok] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// containsValue reports whether some doc still holds v in one of its
// forms.
func containsValue(docs []doc, v string) bool {
	for _, d := range docs {
		for _, f := range jsonForms(v) {
			if strings.Contains(d.text, f) {
				return true
			}
		}
	}
	return false
}
