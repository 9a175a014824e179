package upstream

import (
	"io"
	"strings"
	"testing"
)

// TestTeesAreBounded: a message longer than maxCapture is not buffered
// whole: the JSON tee captures nothing (the SDK's decoding stands in), and
// the SSE tee skips that event only, capturing the response after it, and
// keeps no buffer grown for it.
func TestTeesAreBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a", maxCapture)

	s := &sink{}
	j := &jsonTee{body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"x":"` + huge + `"}}`)), sink: s}
	if _, err := io.Copy(io.Discard, j); err != nil {
		t.Fatal(err)
	}
	if s.result() != nil || j.buf != nil || !j.over {
		t.Errorf("an oversized JSON body: captured %d bytes, buffer %d bytes", len(s.result()), len(j.buf))
	}

	s = &sink{}
	f := newFlow()
	stream := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1,\"message\":\"" + huge + "\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}\n\n"
	sse := &sseTee{body: io.NopCloser(strings.NewReader(stream)), sink: s, flow: f}
	if _, err := io.Copy(io.Discard, sse); err != nil {
		t.Fatal(err)
	}
	if got := string(s.result()); got != `{"ok":true}` {
		t.Errorf("after an oversized event, captured %q, want the response", got)
	}
	if c := cap(sse.data) + cap(sse.line); c > keepBuffer {
		t.Errorf("after the stream the tee holds %d bytes, more than it keeps between events (%d)", c, keepBuffer)
	}
}
