package preflight_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight"
)

// FuzzResolveResultJSON decodes arbitrary bytes as a tools/resolve result.
// Decoding never panics; a decoded result is in exactly one shape as
// SeedShape reports it, encodes, and reaches a fixed point after one
// encode/decode (what a proxy that re-sends a result would produce). The
// client's acceptance of decoded results is fuzzed in package resolve
// (FuzzPreflightResult).
func FuzzResolveResultJSON(f *testing.F) {
	for _, r := range benchResults {
		f.Add([]byte(r.json))
	}
	for _, s := range []string{
		`{}`,
		`null`,
		`[]`,
		`{"tool":null}`,
		`{"tool":{}}`,
		`{"tool":{"name":"x","annotations":null,"resolve":"yes"}}`,
		`{"tool":{"name":"x","securitySchemes":[{"type":"noauth"},{"type":"oauth2","scopes":["a"]}]}}`,
		`{"resultType":"complete","name":"x","annotations":{}}`,
		`{"resultType":"incomplete","annotations":{"readOnlyHint":"true"}}`,
		`{"resultType":"complete","name":"x","annotations":{"destructiveHint":null},"tool":{"name":"y"}}`,
		`{"_meta":{"securitySchemes":[{"type":"noauth"}]},"resultType":"complete","name":"x","annotations":{"openWorldHint":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r preflight.ResolveResult
		if err := json.Unmarshal(data, &r); err != nil {
			return
		}
		if r.SeedShape() != (r.Tool != nil) {
			t.Fatalf("SeedShape() = %v with Tool %v", r.SeedShape(), r.Tool)
		}
		once, err := json.Marshal(&r)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", data, err)
		}
		var r2 preflight.ResolveResult
		if err := json.Unmarshal(once, &r2); err != nil {
			t.Fatalf("cannot decode own encoding %s: %v", once, err)
		}
		if r2.SeedShape() != r.SeedShape() {
			t.Fatalf("shape changed through JSON: %s -> %s", data, once)
		}
		twice, err := json.Marshal(&r2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("no fixed point:\n in: %s\n  1: %s\n  2: %s", data, once, twice)
		}
	})
}
