package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{})
	for _, c := range []struct {
		raw  string
		want string // "" ok; "invalid": ErrInvalidArguments; else a fragment of a non-fatal problem
	}{
		{`{"method":"create"}`, ""},
		{`{"method":"create","method":"delete"}`, "invalid"},
		{`{"method":"create","m\u0065thod":"delete"}`, "invalid"},
		{`{"a":{"b":1,"b":2}}`, "invalid"},
		{`{"a":[{"b":1},{"b":1}]}`, ""},
		{`{"a":[{"b":1,"c":{"b":1}}]}`, ""},
		{`{"k\"ey":"{\"k\":1,\"k\":2}","x":"[,:]"}`, ""},
		{`{"a\\":1,"a\\\\":2}`, ""},
		{`{"":1,"":2}`, "invalid"},
		{`{"a":1} {"b":2}`, "invalid"},
		{`{"a":` + strings.Repeat(`[`, maxDepth) + strings.Repeat(`]`, maxDepth) + `}`, "nest"},
		{`{"a":` + strings.Repeat(`[`, maxDepth-2) + strings.Repeat(`]`, maxDepth-2) + `}`, ""},
	} {
		_, err := r.decode(json.RawMessage(c.raw))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.raw, err)
		case c.want == "invalid" && !errors.Is(err, ErrInvalidArguments):
			t.Errorf("%s: %v, want ErrInvalidArguments", c.raw, err)
		case c.want != "" && c.want != "invalid" && (err == nil || errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a problem mentioning %q", c.raw, err, c.want)
		}
	}
}

// repeatsKey is a second, independent way to find a repeated key: the
// decoder's token stream.
func repeatsKey(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				ks, _ := k.(string)
				if seen[ks] {
					return true
				}
				seen[ks] = true
				if walk() {
					return true
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if walk() {
					return true
				}
			}
			_, _ = dec.Token()
		}
		return false
	}
	return walk()
}

// FuzzDecode checks the argument decoder against the token stream: it
// accepts exactly the objects without a repeated key, and never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"\u0063":2}]}}`, `{"a":"\"b\":1,\"b\":2"}`, `{"a\\":1}`, `{`, `[]`, `{"a":[[[[1]]]]}`} {
		f.Add([]byte(s))
	}
	r, err := Compile(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := r.decode(raw)
		var probe map[string]any
		valid := json.Unmarshal(raw, &probe) == nil && probe != nil
		switch {
		case err == nil:
			if args == nil {
				t.Fatal("nil arguments without an error")
			}
			if valid && repeatsKey(raw) {
				t.Fatalf("%s: a repeated key was accepted", raw)
			}
		case errors.Is(err, ErrInvalidArguments):
			if valid && !repeatsKey(raw) {
				t.Fatalf("%s: refused: %v", raw, err)
			}
		default: // too large or too deep
			if !strings.Contains(err.Error(), "static declaration") {
				t.Fatalf("%s: %v", raw, err)
			}
		}
	})
}
