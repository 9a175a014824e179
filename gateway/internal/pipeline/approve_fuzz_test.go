package pipeline

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
)

// FuzzWireCapabilities: whatever params a client sends on the passthrough
// path, reading its declared capabilities never panics, and URL
// elicitation is found only where it was declared.
func FuzzWireCapabilities(f *testing.F) {
	f.Add([]byte(`{"name":"t","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}`))
	f.Add([]byte(`{"_meta":[]}`))
	f.Add([]byte(`nope`))
	f.Fuzz(func(t *testing.T, params []byte) {
		caps := wireCapabilities(params)
		_ = approval.SupportsURL(caps)
	})
}

func TestWireCapabilities(t *testing.T) {
	for _, tc := range []struct {
		params string
		url    bool
	}{
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}`, true},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":"x"}}}`, false},
		{`{"arguments":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}}`, false},
		{`{}`, false},
	} {
		if got := approval.SupportsURL(wireCapabilities([]byte(tc.params))); got != tc.url {
			t.Errorf("%s: URL elicitation %v, want %v", tc.params, got, tc.url)
		}
	}
}
