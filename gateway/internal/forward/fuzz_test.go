package forward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// notes is a Conn that records the notifications it gets.
type notes struct{ got [][]byte }

func (n *notes) Ask(context.Context, string, mcp.InputRequest) (mcp.InputResponse, error) {
	return nil, call.ErrRound
}
func (n *notes) Notify(_ context.Context, method string, params json.RawMessage) {
	n.got = append(n.got, append([]byte(method+" "), params...))
}
func (n *notes) Completed(context.Context, string) {}

// FuzzStreamEvents feeds the passthrough's stream reader arbitrary
// upstream bytes: it must not panic, whatever it returns as the response
// is a message of the stream, and every notification it passes on was in
// the stream.
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
		n := &notes{}
		c := &call.Call{Method: call.ToolsCall, Name: "t", Target: "t", Upstream: conn, Client: &call.Client{Version: "2026-07-28", Conn: n}}
		msg, _ := fw.streamEvents(context.Background(), c, bufio.NewReaderSize(bytes.NewReader(b), 16))
		if msg != nil {
			if _, err := fw.response(c, msg); err == nil && len(b) == 0 {
				t.Fatal("a response from nothing")
			}
		}
		for _, x := range n.got {
			_, params, _ := bytes.Cut(x, []byte(" "))
			if !bytes.Contains(b, params) {
				t.Fatalf("passed on %q, not in the stream", x)
			}
		}
	})
}
