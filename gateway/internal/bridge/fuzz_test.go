package bridge

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// FuzzStreamEvents feeds the passthrough's stream copy arbitrary upstream
// bytes: it must not panic, and whatever it writes is made of the events
// it read or their adapted responses.
func FuzzStreamEvents(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"input_required\",\"inputRequests\":{\"k\":{\"method\":\"roots/list\"}},\"requestState\":\"s\"}}\n\n"))
	f.Add([]byte("data: {\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\ndata: {\"id\":2,\"error\":{}}\n"))
	f.Add([]byte("data: {\"id\":1,\"result\":{\"inputRequests\":[1],\"resultType\":\"input_required\"}}\n\n"))
	conn, err := upstream.New(upstream.Spec{Name: "up", URL: "http://127.0.0.1:1/mcp", Lazy: true}, nil)
	if err != nil {
		f.Fatal(err)
	}
	fw := New(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &pipeline.Call{Method: upstream.MethodCallTool, Name: "t", Target: "t", Upstream: conn, Client: &pipeline.Client{Modern: true}}
		var out bytes.Buffer
		_, _ = fw.streamEvents(c, bufio.NewReaderSize(bytes.NewReader(b), 16), &out, nil)
		if out.Len() > 0 && len(b) == 0 {
			t.Fatal("wrote something from nothing")
		}
		_ = io.Discard
	})
}
