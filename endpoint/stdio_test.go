package endpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"

	"go.uber.org/goleak"
)

// stdioPeer is a raw client on a pipe pair served by the guarded stdio
// transport.
type stdioPeer struct {
	t       *testing.T
	in      *io.PipeWriter
	out     *io.PipeReader
	replies *bufio.Scanner
	served  chan error
}

func newStdioPeer(t *testing.T) *stdioPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, out: outR, replies: bufio.NewScanner(outR), served: make(chan error, 1)}
	go func() {
		err := serveTransport(context.Background(), newTestServer(), stdioTransport(inR, outW))
		outW.Close() // a connection that ends unblocks the reader: no reply
		p.served <- err
	}()
	return p
}

func (p *stdioPeer) close() {
	p.in.Close()
	<-p.served
	p.out.Close()
}

// send writes line and, unless it is a notification, returns the reply.
func (p *stdioPeer) send(line string, reply bool) map[string]any {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
	if !reply {
		return nil
	}
	if !p.replies.Scan() {
		p.t.Fatalf("no reply to %s: %v", line, p.replies.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(p.replies.Bytes(), &m); err != nil {
		p.t.Fatalf("reply %q: %v", p.replies.Text(), err)
	}
	return m
}

var badLines = []struct {
	line string
	code float64
	id   any
}{
	{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":`, -32700, nil},
	{`not json at all`, -32700, nil},
	{`{"id":7,"hello":"world"}`, -32600, 7.0},
	{`{"id":{"x":1}}`, -32600, nil},
	{`42`, -32600, nil},
	{`[]`, -32600, nil},
	{`[1]`, -32600, nil},
	{`[{"jsonrpc":"2.0","id":11,"method":"ping"}]`, -32600, nil},
}

func (p *stdioPeer) sendBadLines() {
	p.t.Helper()
	for _, c := range badLines {
		m := p.send(c.line, true)
		e, _ := m["error"].(map[string]any)
		if e["code"] != c.code || m["id"] != c.id {
			p.t.Errorf("%s:\n reply %v, want code %v id %v", c.line, m, c.code, c.id)
		}
	}
}

func hasResult(m map[string]any) bool { _, ok := m["result"]; return ok }

// TestStdioBadLines: lines that are not JSON-RPC messages are answered with
// their codes, and the connection goes on serving, in both eras.
func TestStdioBadLines(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("2026-07-28", func(t *testing.T) {
		p := newStdioPeer(t)
		defer p.close()
		p.sendBadLines()
		m := p.send(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, true)
		if !hasResult(m) {
			t.Errorf("tools/list after bad lines: %v", m)
		}
	})
	t.Run("2025-11-25", func(t *testing.T) {
		p := newStdioPeer(t)
		defer p.close()
		p.sendBadLines()
		m := p.send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, true)
		if r, _ := m["result"].(map[string]any); r["protocolVersion"] != "2025-11-25" {
			t.Fatalf("initialize after bad lines: %v", m)
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
		p.sendBadLines()
		if m := p.send(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`, true); !hasResult(m) {
			t.Errorf("tools/list in the session after bad lines: %v", m)
		}
	})
}
