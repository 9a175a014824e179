package requeststate

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestArgumentsDigestEqual(t *testing.T) {
	type nested struct {
		Y bool `json:"y"`
		X any  `json:"x"`
	}
	type args struct {
		B []any `json:"b"`
		A int   `json:"a"`
	}
	groups := [][]any{
		{
			raw(`{"a":1,"b":[1,2,{"x":null,"y":true}]}`),
			raw(" {\n \"b\" : [ 1 , 2.0 , {\"y\":true, \"x\":null} ] , \"a\" : 1e0 }\t"),
			map[string]any{"b": []any{1, 2.0, map[string]any{"y": true, "x": nil}}, "a": float64(1)},
			map[string]any{"a": json.Number("1"), "b": []any{json.Number("10e-1"), json.Number("0.2e1"), map[string]any{"x": nil, "y": true}}},
			args{A: 1, B: []any{1, 2, nested{Y: true}}},
			&args{A: 1, B: []any{int64(1), uint8(2), map[string]any{"y": true, "x": nil}}},
		},
		{nil, raw(""), raw("  "), raw("null"), raw(" null "), map[string]any{}, map[string]string(nil), raw("{}"), struct{}{}},
		{raw(`0`), raw(`-0`), raw(`0.000`), raw(`0e10`), raw(`-0.0E-7`), float64(0), math.Copysign(0, -1), json.Number("-0")},
		{raw(`100`), raw(`1e2`), raw(`1.00E+2`), raw(`100.000`), raw(`10000e-2`), 100, uint64(100), float32(100), json.Number("0.1e3")},
		{raw(`0.1`), float64(0.1), json.Number("1e-1"), raw(`0.10`), raw(`1e-1`), raw(`0.01E1`)},
		{raw(`-1.5`), float64(-1.5), raw(`-15e-1`), raw(`-0.015e2`)},
		{raw(`123456789012345678901234567890`), raw(`1.2345678901234567890123456789e29`), json.Number("123456789012345678901234567890.000")},
		{raw(`1e999999999999999999999`), raw(`10e999999999999999999998`), raw(`0.1e1000000000000000000000`)},
		{raw(`{"k":"v","name":"x"}`), map[string]string{"name": "x", "k": "v"}},
		{raw(`"a\u0000\"\\\/\u00e9\ud83d\ude00"`), "a\x00\"\\/é😀"},
		{raw(`[{"b":1,"a":{"d":[],"c":{}}}]`), []any{map[string]any{"a": map[string]any{"c": map[string]any{}, "d": []any{}}, "b": 1}}},
	}
	for gi, g := range groups {
		want := mustDigest(t, g[0])
		for i, v := range g[1:] {
			if got := mustDigest(t, v); got != want {
				c0, _ := canonicalArguments(g[0])
				ci, _ := canonicalArguments(v)
				t.Errorf("group %d: value %d (%T) digests as %s, value 0 as %s\ncanonical %s vs %s", gi, i+1, v, got, want, ci, c0)
			}
		}
	}
}

func TestArgumentsDigestDiffer(t *testing.T) {
	pairs := [][2]any{
		{raw(`{"a":1}`), raw(`{"a":2}`)},
		{raw(`{"a":1}`), raw(`{"a":"1"}`)},
		{raw(`{"a":true}`), raw(`{"a":"true"}`)},
		{raw(`{"a":null}`), raw(`{}`)},
		{raw(`{"a":1}`), raw(`{"a":1,"b":null}`)},
		{raw(`{"a":1}`), raw(`{"A":1}`)},
		{raw(`[1,2]`), raw(`[2,1]`)},
		{raw(`[]`), raw(`{}`)},
		{raw(`[]`), nil},
		{raw(`[null]`), raw(`[]`)},
		{raw(`9007199254740993`), raw(`9007199254740992`)},
		{raw(`1e400`), raw(`2e400`)},
		{raw(`1e-400`), raw(`0`)},
		{raw(`1.0000000000000000000001`), raw(`1`)},
		{raw(`-1`), raw(`1`)},
		{raw(`"x"`), raw(`"x\u0000"`)},
		{raw(`"a"`), raw(`"A"`)},
		// Keys equal ignoring case keep their order: a case-insensitive or
		// first-wins decoder could read the two differently.
		{raw(`{"Path":"/tmp","path":"/"}`), raw(`{"path":"/","Path":"/tmp"}`)},
		{raw(`{"a":1,"a":2}`), raw(`{"a":2,"a":1}`)},
		{raw(`{"a":1,"a":2}`), raw(`{"a":2}`)},
		{raw(`{"K":1,"\u212a":2}`), raw(`{"\u212a":2,"K":1}`)},
		{raw(`{"a":{"b":1}}`), raw(`{"a":{"b":1.5}}`)},
		{raw(`{"a":[{"b":1},{"c":2}]}`), raw(`{"a":[{"c":2},{"b":1}]}`)},
		{map[string]string{"name": "x"}, map[string]string{"name": "y"}},
	}
	for _, p := range pairs {
		if a, b := mustDigest(t, p[0]), mustDigest(t, p[1]); a == b {
			t.Errorf("%s and %s have the same digest", p[0], p[1])
		}
	}
	// Reordering members whose keys differ also ignoring case still gives
	// equal digests around a case-insensitive pair.
	a := mustDigest(t, raw(`{"z":0,"Path":"/tmp","b":1,"path":"/"}`))
	b := mustDigest(t, raw(`{"b":1,"Path":"/tmp","path":"/","z":0}`))
	if a != b {
		t.Error("reordering unrelated keys around a case pair changed the digest")
	}
}

func TestArgumentsDigestErrors(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	for _, v := range []any{
		raw(`{`), raw(`{"a":}`), raw(`{"a" 1}`), raw(`{a:1}`), raw(`[1,]`), raw(`{} {}`), raw(`{}x`), raw(`{}]`),
		raw(`"\x"`), raw(`01`), raw(`1.`), raw(`+1`), raw(`NaN`), raw(`tru`), raw(deep),
		json.Number("00"), json.Number("1e"), math.NaN(), math.Inf(1), make(chan int), map[string]any{"f": func() {}},
	} {
		if d, err := ArgumentsDigest(v); err == nil {
			t.Errorf("ArgumentsDigest(%v) = %s, want an error", v, d)
		}
	}
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := ArgumentsDigest(raw(ok)); err != nil {
		t.Errorf("nesting of %d: %v", maxDepth, err)
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1.50,"a":"x\ny\u001f<>&\u2028","c":[true,false,null,-0.0,1E3,-12.5e-3,7]}`,
			`{"a":"x\u000ay\u001f<>&` + "\u2028" + `","b":15e-1,"c":[true,false,null,0,1e3,-125e-4,7]}`},
		{` {"é":1,"e":2,"E":3,"f":4} `, `{"e":2,"E":3,"f":4,"é":1}`},
		{`null`, `{}`},
		{`"s"`, `"s"`},
		{`[]`, `[]`},
		{`1e+0021`, `1e21`},
		{`120e-0`, `12e1`},
		{`-0.00001200`, `-12e-6`},
		{`1e99999999999999999999`, `1e99999999999999999999`},
		{`100e-99999999999999999999`, `1e-99999999999999999997`},
	}
	for _, tt := range tests {
		got, err := canonicalArguments(raw(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("canonical(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("canonical(%s) = %s is not JSON", tt.in, got)
		}
		again, err := canonicalArguments(raw(string(got)))
		if err != nil || string(again) != string(got) {
			t.Errorf("canonical form of %s is not a fixed point: %s, %v", got, again, err)
		}
	}
	if got := mustDigest(t, nil); len(got) != 43 {
		t.Errorf("digest %q is not 43 characters", got)
	}
}

func TestFoldKeyIsEqualFold(t *testing.T) {
	words := []string{"", "a", "A", "k", "K", "\u212a", "s", "S", "\u017f", "σ", "Σ", "ς", "ß", "ẞ", "ss", "é", "É",
		"path", "Path", "PATH", "pAtH", "dž", "Dž", "DŽ", "ǅ", "1", "_", "İ", "i", "I", "ı", "\ufffd", "日本"}
	for _, a := range words {
		for _, b := range words {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("foldKey(%q)==foldKey(%q) is %v, EqualFold %v", a, b, got, want)
			}
		}
	}
	// Every rune: folding to the smallest orbit member agrees with EqualFold.
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) == r {
			continue // folds only to itself
		}
		f := foldKey(string(r))
		for g := unicode.SimpleFold(r); g != r; g = unicode.SimpleFold(g) {
			if foldKey(string(g)) != f || !strings.EqualFold(string(r), string(g)) {
				t.Fatalf("%q and %q fold apart", r, g)
			}
		}
	}
}
