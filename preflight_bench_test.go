package preflight_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
)

// benchResults are tools/resolve results of manage_files' read action as a
// server sends them, in both shapes.
var benchResults = []struct{ shape, json string }{
	{"extension", `{"resultType":"complete","name":"manage_files",` +
		`"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},` +
		`"_meta":{"mcp.dev/effect":"read","mcp.dev/idempotent":true,"mcp.dev/requiresConfirmation":false}}`},
	{"seed", `{"tool":{"name":"manage_files","description":"Read, append, replace, or delete file contents",` +
		`"inputSchema":{"type":"object","required":["path","action"],"properties":{` +
		`"path":{"type":"string","description":"file path, relative to the server's root directory"},` +
		`"action":{"type":"string","description":"operation to perform: read, append, replace or delete","enum":["read","append","replace","delete"]},` +
		`"content":{"type":"string","description":"content for append and replace"}},"additionalProperties":false},` +
		`"annotations":{"title":"Manage files","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},` +
		`"_meta":{"mcp.dev/effect":"read","mcp.dev/idempotent":true,"mcp.dev/requiresConfirmation":false},"resolve":true}}`},
}

// BenchmarkResolveResultJSON measures decoding and encoding a
// tools/resolve result with encoding/json, in both shapes: the part of a
// round trip that grows with the result (the seed shape carries the whole
// tool, input schema included).
func BenchmarkResolveResultJSON(b *testing.B) {
	for _, r := range benchResults {
		b.Run("shape="+r.shape+"/op=decode", func(b *testing.B) {
			data := []byte(r.json)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var res preflight.ResolveResult
				if err := json.Unmarshal(data, &res); err != nil || res.SeedShape() != (r.shape == "seed") {
					b.Fatal(err)
				}
			}
		})
		b.Run("shape="+r.shape+"/op=encode", func(b *testing.B) {
			var res preflight.ResolveResult
			if err := json.Unmarshal([]byte(r.json), &res); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(&res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnnotations measures reading static annotations with the core
// defaults (every resolution does it) and the worst case of a four-row
// table (done once per tool, when it is added). The bounds check is
// hints.Exceeds, measured in package hints.
func BenchmarkAnnotations(b *testing.B) {
	f := false
	static := &mcp.ToolAnnotations{DestructiveHint: nil, OpenWorldHint: &f}
	rows := []preflight.Annotations{
		{ReadOnlyHint: true, IdempotentHint: true},
		{},
		{DestructiveHint: true, IdempotentHint: true},
		{DestructiveHint: true, IdempotentHint: true},
	}
	b.Run("op=AnnotationsOf", func(b *testing.B) {
		for b.Loop() {
			if a := preflight.AnnotationsOf(static); !a.DestructiveHint {
				b.Fatal(a)
			}
		}
	})
	b.Run("op=WorstCase", func(b *testing.B) {
		for b.Loop() {
			if w := preflight.WorstCase(rows...); w.ReadOnlyHint {
				b.Fatal(w)
			}
		}
	})
}
