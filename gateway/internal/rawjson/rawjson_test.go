package rawjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestGetSetDelete(t *testing.T) {
	t.Parallel()
	obj := []byte(` { "name" : "read", "annotations":{"readOnlyHint":false,"x":[1,"}",{"a":"\""}]},"n":-1.5e3 , "esc\u0061pe":true } `)
	v, ok, err := Get(obj, "annotations")
	if err != nil || !ok || string(v) != `{"readOnlyHint":false,"x":[1,"}",{"a":"\""}]}` {
		t.Fatalf("Get annotations = %s, %v, %v", v, ok, err)
	}
	if v, ok, _ := Get(obj, "escape"); !ok || string(v) != "true" {
		t.Errorf("Get of an escaped key = %s, %v", v, ok)
	}
	if s, ok, _ := GetString(obj, "name"); !ok || s != "read" {
		t.Errorf("GetString name = %q, %v", s, ok)
	}
	if _, ok, _ := GetString(obj, "n"); ok {
		t.Error("GetString of a number succeeded")
	}
	if _, ok, _ := Get(obj, "missing"); ok {
		t.Error("Get of a missing key succeeded")
	}

	set, err := Set(obj, "name", []byte(`"files__read"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := ` { "name" : "files__read", "annotations":{"readOnlyHint":false,"x":[1,"}",{"a":"\""}]},"n":-1.5e3 , "esc\u0061pe":true } `; string(set) != want {
		t.Errorf("Set replaced:\n got %s\nwant %s", set, want)
	}
	added, err := Set([]byte(`{"a":1}`), "b", []byte(`{"c":false}`))
	if err != nil || string(added) != `{"a":1,"b":{"c":false}}` {
		t.Errorf("Set appended = %s, %v", added, err)
	}
	added, err = Set([]byte(`{ }`), "b", []byte(`2`))
	if err != nil || string(added) != `{ "b":2}` {
		t.Errorf("Set into empty = %s, %v", added, err)
	}

	del, err := Delete(obj, "n", "escape")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"read","annotations":{"readOnlyHint":false,"x":[1,"}",{"a":"\""}]}}`; string(del) != want {
		t.Errorf("Delete = %s, want %s", del, want)
	}
	same, _ := Delete(obj, "nothing")
	if !bytes.Equal(same, obj) {
		t.Error("Delete without a match changed the object")
	}
}

func TestElements(t *testing.T) {
	t.Parallel()
	els, err := Elements([]byte(` [ {"name":"a"} , "x]" ,3,[true]] `))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range els {
		got = append(got, string(e))
	}
	if want := []string{`{"name":"a"}`, `"x]"`, `3`, `[true]`}; !reflect.DeepEqual(got, want) {
		t.Errorf("Elements = %q, want %q", got, want)
	}
	if els, err := Elements([]byte(`[]`)); err != nil || len(els) != 0 {
		t.Errorf("Elements([]) = %v, %v", els, err)
	}
}

func TestRefusesNonObjects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"1}`, `{1:2}`} {
		if _, err := Members([]byte(in)); err == nil {
			t.Errorf("Members(%q) succeeded", in)
		}
		if _, err := Set([]byte(in), "a", []byte("1")); err == nil {
			t.Errorf("Set(%q) succeeded", in)
		}
	}
}

// FuzzMembers checks that Members never panics and, for valid objects,
// agrees with encoding/json on the keys and values, and that Set and Delete
// keep the object valid.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,2,"]"]},"c":"\"}"}`, `{"\u0041":null}`, `[1]`, `{"a":tru`, ` {"a" : false } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ms, err := Members(in)
		var want map[string]json.RawMessage
		valid := json.Unmarshal(in, &want) == nil && bytes.HasPrefix(bytes.TrimSpace(in), []byte("{"))
		if !valid {
			return // Members may or may not refuse invalid JSON; it must not panic
		}
		if err != nil {
			t.Fatalf("Members(%q) failed on a valid object: %v", in, err)
		}
		got := map[string]json.RawMessage{}
		for _, m := range ms {
			got[m.Key] = m.Value // the last duplicate wins, as in encoding/json
		}
		if len(got) != len(want) {
			t.Fatalf("Members(%q): %d keys, encoding/json %d", in, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("Members(%q)[%q] = %s, want %s", in, k, got[k], v)
			}
		}
		out, err := Set(in, "zz", []byte(`{"k":false}`))
		if err != nil || !json.Valid(out) {
			t.Fatalf("Set(%q) = %s, %v", in, out, err)
		}
		if v, ok, _ := Get(out, "zz"); !ok || string(v) != `{"k":false}` {
			t.Fatalf("Get after Set(%q) = %s, %v", in, v, ok)
		}
		del, err := Delete(out, "zz")
		if err != nil || !json.Valid(del) {
			t.Fatalf("Delete = %s, %v", del, err)
		}
		if _, ok, _ := Get(del, "zz"); ok {
			t.Fatalf("Delete(%q) kept the key", out)
		}
	})
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		obj  string
		key  string
		dup  bool
		fail bool
	}{
		{obj: `{"name":"a","arguments":{"name":"x","name":"y"}}`},
		{obj: `{"name":"a","name":"b"}`, key: "name", dup: true},
		{obj: `{"name":"a","n\u0061me":"b"}`, key: "name", dup: true},
		{obj: `{}`},
		{obj: `[1]`, fail: true},
	} {
		key, dup, err := Duplicate([]byte(c.obj))
		if (err != nil) != c.fail || dup != c.dup || key != c.key {
			t.Errorf("Duplicate(%s) = %q, %v, %v; want %q, %v, error %v", c.obj, key, dup, err, c.key, c.dup, c.fail)
		}
	}
}
