package endpoint

import (
	"bytes"
	"io"
	"net/http/httptest"
	"testing"
)

// FuzzBodyPeek: whatever a POST body holds, the router's looks at it
// (array or not, request id, protocol version) never panic, and the body
// passed on yields exactly the bytes that came in.
func FuzzBodyPeek(f *testing.F) {
	for _, s := range []string{
		``, `[]`, `  [1]`, "\n\t[", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		`{"id":"x","method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"id":{"a":1},"method":"m"}`, `{"id":-1}`, `null`, `"str"`, "   ",
	} {
		f.Add([]byte(s), int64(16))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int64) {
		limit = max(1, limit%(int64(len(body))+8))
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader(body))
		array := isArray(req, limit)
		id := requestID(req, limit)
		h := &Handler{peekLimit: limit}
		h.peekVersion(req)
		got, err := io.ReadAll(req.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("the body passed on differs: %q, %v; want %q", got, err, body)
		}
		if trimmed := bytes.TrimLeft(body, " \t\r\n"); array != (len(trimmed) > 0 && trimmed[0] == '[' && int64(len(body)-len(trimmed)) <= limit) {
			t.Errorf("isArray(%q) = %v", body, array)
		}
		if id != nil && id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			t.Errorf("requestID(%q) = %s, not a string or a number", body, id)
		}
	})
}
