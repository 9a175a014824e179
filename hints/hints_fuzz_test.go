package hints_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

var fuzzKeys = []string{
	preflight.MetaEffect,
	preflight.MetaIdempotent,
	preflight.MetaRequiresConfirmation,
	preflight.MetaResultSensitivity,
}

// FuzzRead reads hints from arbitrary JSON objects, decoded as a client
// decodes _meta. Read never panics; hints read without error survive
// Write and Read (directly and through JSON) unchanged; an error is made
// only of *hints.Error values, each naming one of the four mcp.dev/ keys
// present in the input and listing the allowed values; valid keys are
// returned even when others are not.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"mcp.dev/effect":"read","mcp.dev/idempotent":true,"mcp.dev/requiresConfirmation":false,"mcp.dev/resultSensitivity":"public"}`,
		`{"mcp.dev/effect":"delete","mcp.dev/requiresConfirmation":true}`,
		`{"mcp.dev/effect":"shred"}`,
		`{"mcp.dev/effect":"Read"}`,
		`{"mcp.dev/effect":""}`,
		`{"mcp.dev/effect":null}`,
		`{"mcp.dev/effect":["read"]}`,
		`{"mcp.dev/idempotent":"true"}`,
		`{"mcp.dev/idempotent":1}`,
		`{"mcp.dev/requiresConfirmation":{}}`,
		`{"mcp.dev/resultSensitivity":"secret","mcp.dev/effect":"write"}`,
		`{"mcp.dev/resultSensitivity":"restricted","other/key":1,"io.modelcontextprotocol/tool-resolution":{"resolvable":true}}`,
		`{"mcp.dev/effect":"external","mcp.dev/effect":"bogus"}`,
		`{"mcp.dev/effect":"\u0072ead"}`,
		`{"mcp.dev/Effect":"read"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var meta map[string]any
		if json.Unmarshal(data, &meta) != nil || meta == nil {
			return // not a JSON object: not a _meta
		}
		before, _ := json.Marshal(meta)
		h, err := hints.Read(meta)

		inError := map[string]bool{}
		if err != nil {
			leaves := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				leaves = j.Unwrap()
			}
			for _, e := range leaves {
				var he *hints.Error
				if !errors.As(e, &he) || he != e {
					t.Fatalf("error %v (%T) is not a *hints.Error", e, e)
				}
				if !strings.HasPrefix(he.Key, "mcp.dev/") {
					t.Errorf("error names key %q, not an mcp.dev/ key", he.Key)
				}
				v, present := meta[he.Key]
				if !present {
					t.Errorf("error names key %q, absent from the input", he.Key)
				}
				if !reflect.DeepEqual(he.Value, v) {
					t.Errorf("error for %s reports value %#v, input has %#v", he.Key, he.Value, v)
				}
				if len(he.Allowed) == 0 {
					t.Errorf("error for %s lists no allowed values", he.Key)
				}
				msg := he.Error()
				for _, a := range he.Allowed {
					if !strings.Contains(msg, a) {
						t.Errorf("message %q does not list allowed value %q", msg, a)
					}
				}
				if !strings.Contains(msg, he.Key) || !strings.Contains(err.Error(), msg) {
					t.Errorf("message %q does not name the key, or is missing from %q", msg, err)
				}
				inError[he.Key] = true
			}
		}
		if vErr := h.Validate(); vErr != nil {
			t.Fatalf("Read returned hints that do not validate: %+v: %v", h, vErr)
		}

		// Every key present and valid is read; every key absent stays unset.
		got := h.Write(nil)
		for _, k := range fuzzKeys {
			v, present := meta[k]
			w, written := got[k]
			switch {
			case present && !inError[k] && (!written || !reflect.DeepEqual(v, w)):
				t.Errorf("%s: input %#v, read back as %#v (written %v)", k, v, w, written)
			case (!present || inError[k]) && written:
				t.Errorf("%s: input %#v (present %v, invalid %v) but read as %#v", k, v, present, inError[k], w)
			}
		}

		// Read leaves its input alone.
		if after, _ := json.Marshal(meta); string(after) != string(before) {
			t.Fatalf("Read modified its input:\n%s\n%s", before, after)
		}
		if err != nil {
			return
		}

		// No error: Write then Read gives the same hints, in memory and
		// through JSON, and Write keeps the other keys.
		merged := h.Write(meta)
		if after, _ := json.Marshal(meta); string(after) != string(before) {
			t.Fatalf("Write modified its input:\n%s\n%s", before, after)
		}
		if !reflect.DeepEqual(merged, meta) {
			t.Errorf("Write of hints read from meta changed it:\n got %#v\nwant %#v", merged, meta)
		}
		h2, err := hints.Read(h.Write(nil))
		if err != nil || !reflect.DeepEqual(h2, h) {
			t.Errorf("Write/Read: %+v, %v; want %+v", h2, err, h)
		}
		b, err := json.Marshal(merged)
		if err != nil {
			t.Fatal(err)
		}
		var wire map[string]any
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		h3, err := hints.Read(wire)
		if err != nil || !reflect.DeepEqual(h3, h) {
			t.Errorf("Write/JSON/Read: %+v, %v; want %+v", h3, err, h)
		}
	})
}

// FuzzReadObject: the policy-hints object of an extension-shape result
// reads exactly as the same names under their scalar mcp.dev/ keys, and
// Object then ReadObject gives the hints back.
func FuzzReadObject(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`null`,
		`[]`,
		`"read"`,
		`{"effect":"read","idempotent":true,"requiresConfirmation":false,"resultSensitivity":"public"}`,
		`{"effect":"delete","requiresConfirmation":true,"other":1}`,
		`{"effect":"shred","idempotent":"yes"}`,
		`{"mcp.dev/effect":"read"}`,
		`{"resultSensitivity":null}`,
	} {
		f.Add([]byte(s))
	}
	scalar := map[string]string{
		"effect": preflight.MetaEffect, "idempotent": preflight.MetaIdempotent,
		"requiresConfirmation": preflight.MetaRequiresConfirmation, "resultSensitivity": preflight.MetaResultSensitivity,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		h, err := hints.ReadObject(v)
		obj, isObject := v.(map[string]any)
		if !isObject {
			if v != nil && err == nil {
				t.Fatalf("ReadObject(%s) accepted a value that is not an object", data)
			}
			if !h.IsZero() {
				t.Fatalf("ReadObject(%s) = %+v, want no hints", data, h)
			}
			return
		}
		meta := map[string]any{}
		for name, key := range scalar {
			if x, ok := obj[name]; ok {
				meta[key] = x
			}
		}
		want, werr := hints.Read(meta)
		if !reflect.DeepEqual(h, want) || (err == nil) != (werr == nil) {
			t.Fatalf("ReadObject(%s) = %+v, %v; the scalar keys read as %+v, %v", data, h, err, want, werr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), preflight.MetaPolicyHints+".") {
				t.Errorf("error %q does not name the object's key", err)
			}
			return
		}
		back, err := hints.ReadObject(h.Object())
		if err != nil || !reflect.DeepEqual(back, h) {
			t.Errorf("Object/ReadObject: %+v, %v; want %+v", back, err, h)
		}
	})
}
