package jsonc_test

import (
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/jsonc"
)

func TestStrip(t *testing.T) {
	t.Parallel()
	in := "{\n  // a comment\n  \"a\": \"// not one\", /* block\n */ \"b\": [1, 2,],\n}\n"
	out, bad := jsonc.Strip([]byte(in))
	if bad != -1 || len(out) != len(in) {
		t.Fatalf("Strip: %d bytes, bad %d", len(out), bad)
	}
	var v struct {
		A string
		B []int
	}
	if err := json.Unmarshal(out, &v); err != nil || v.A != "// not one" || len(v.B) != 2 {
		t.Fatalf("%q: %+v %v", out, v, err)
	}
	for i := range in {
		if (in[i] == '\n') != (out[i] == '\n') {
			t.Fatalf("line breaks moved at %d", i)
		}
	}
	if _, bad := jsonc.Strip([]byte(`{"a": 1 /* open`)); bad != 8 {
		t.Errorf("unterminated comment at %d, want 8", bad)
	}
}
