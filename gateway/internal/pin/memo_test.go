package pin

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzMemoKey checks that the memo key never hides a change: tools with
// equal keys have equal fingerprints, and a tool decoded twice has one
// key.
func FuzzMemoKey(f *testing.F) {
	f.Add(`{"name":"a","description":"x","inputSchema":{"type":"object","properties":{"p":{"enum":[1,2]}}},"annotations":{"destructiveHint":false},"_meta":{"mcp.dev/effect":"read","x/y":1}}`,
		`{"name":"a","description":"x","inputSchema":{"type":"object","properties":{"p":{"enum":[1,"2"]}}},"annotations":{"destructiveHint":false},"_meta":{"mcp.dev/effect":"read","x/y":2}}`)
	f.Add(`{"name":"a","inputSchema":{"a":"b","c":"d"}}`, `{"name":"a","inputSchema":{"a":"bc","":"d"}}`)
	f.Add(`{"name":"a","inputSchema":[["a"],[]]}`, `{"name":"a","inputSchema":[["a",[]]]}`)
	f.Add(`{"name":"a","title":"ab","description":"c"}`, `{"name":"a","title":"a","description":"bc"}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var ta, tb, ta2 mcp.Tool
		if json.Unmarshal([]byte(a), &ta) != nil || json.Unmarshal([]byte(b), &tb) != nil {
			return
		}
		_ = json.Unmarshal([]byte(a), &ta2)
		if memoKey(&ta) != memoKey(&ta2) {
			t.Fatal("one tool decoded twice has two keys")
		}
		da, err1 := Define(&ta)
		db, err2 := Define(&tb)
		if err1 != nil || err2 != nil {
			return
		}
		if memoKey(&ta) == memoKey(&tb) && da.Fingerprint() != db.Fingerprint() {
			t.Fatalf("equal keys, fingerprints %s and %s", da.Fingerprint(), db.Fingerprint())
		}
	})
}

// TestMemoKeyTypes checks the key of values a server's own tools hold
// (raw JSON, typed schemas) and that they differ by content.
func TestMemoKeyTypes(t *testing.T) {
	t.Parallel()
	type schema struct {
		Type string `json:"type"`
	}
	keys := map[[32]byte]string{}
	for name, in := range map[string]any{
		"nil":     nil,
		"raw":     json.RawMessage(`{"type":"object"}`),
		"raw2":    json.RawMessage(`{"type":"string"}`),
		"struct":  schema{"object"},
		"struct2": schema{"string"},
		"map":     map[string]any{"type": "object"},
		"bad":     func() {},
	} {
		k := memoKey(&mcp.Tool{Name: "t", InputSchema: in})
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s share a key", name, other)
		}
		keys[k] = name
	}
}
