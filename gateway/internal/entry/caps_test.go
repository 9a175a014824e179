package entry

import (
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
)

// FuzzMetaCapabilities: whatever _meta a client sends, reading its
// declared capabilities never panics, and URL elicitation is found only
// where it was declared.
func FuzzMetaCapabilities(f *testing.F) {
	f.Add([]byte(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`))
	f.Add([]byte(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`))
	f.Add([]byte(`{"io.modelcontextprotocol/clientCapabilities":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`nope`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		caps := metaCapabilities(json.RawMessage(meta))
		_ = approval.SupportsURL(caps)
	})
}

func TestMetaCapabilities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		meta string
		url  bool
	}{
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":"x"}}`, false},
		{`{"other":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}`, false},
		{`{}`, false},
	} {
		if got := approval.SupportsURL(metaCapabilities(json.RawMessage(tc.meta))); got != tc.url {
			t.Errorf("%s: URL elicitation %v, want %v", tc.meta, got, tc.url)
		}
	}
}
