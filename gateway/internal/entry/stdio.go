package entry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// maxPendingStdio bounds the readings a stdio connection keeps for
// requests the SDK server has not handed to the middleware yet (it answers
// some, such as calls before initialize, itself).
const maxPendingStdio = 1024

// Stdio returns the entry over newline-delimited JSON-RPC on in and out,
// as a desktop client that starts the gateway as a process speaks it:
// every line is read once by [Parse]; a line refused is answered there
// (-32700, -32600 or -32602, naming the member) and the connection goes
// on; the rest go to the SDK server, whose [Entry.Middleware] turns the
// forwarded methods into Calls from the same reading.
func (e *Entry) Stdio(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
	return &stdioTransport{e: e, in: in, out: out}
}

type stdioTransport struct {
	e   *Entry
	in  io.ReadCloser
	out io.WriteCloser
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{e: t.e, in: t.in, out: t.out, msgs: make(chan jsonrpc.Message), done: make(chan struct{})}
	go c.read()
	return c, nil
}

// stdioConn is one client's connection over stdio.
type stdioConn struct {
	e    *Entry
	in   io.ReadCloser
	out  io.WriteCloser
	msgs chan jsonrpc.Message
	done chan struct{}

	wmu sync.Mutex // one message per line

	mu      sync.Mutex
	err     error
	tokens  []string // readings handed over, oldest first
	closing sync.Once
}

// read reads lines until the input ends.
func (c *stdioConn) read() {
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			c.answer(wire.ErrorResponse(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("message is larger than %d bytes", MaxBytes)}))
			continue
		}
		if len(trimSpace(line)) > 0 {
			if msg := c.admit(trimSpace(line)); msg != nil {
				select {
				case c.msgs <- msg:
				case <-c.done:
					return
				}
			}
		}
		if err != nil {
			c.mu.Lock()
			if c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			close(c.msgs)
			return
		}
	}
}

// admit reads one line: a message for the SDK, or nil when it was
// refused (and answered).
func (c *stdioConn) admit(line []byte) jsonrpc.Message {
	m, err := Parse(line)
	if err != nil {
		var id = []byte(nil)
		code, text := int64(jsonrpc.CodeInvalidRequest), err.Error()
		if pe, ok := err.(*Error); ok {
			id, code, text = pe.ID, pe.Code, pe.Message
		}
		c.e.logger.Info("request refused", "code", code, "reason", text)
		c.answer(wire.ErrorResponse(id, &jsonrpc.Error{Code: code, Message: text}))
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		// Parse is the stricter reader: this is a bug, reported, not a
		// crash.
		c.e.logger.Error("a message the entry accepted could not be decoded", "error", err)
		c.answer(wire.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request"}))
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok && forwarded(m.Method) {
		t := c.e.pending.put(m, false)
		c.mu.Lock()
		c.tokens = append(c.tokens, t)
		if len(c.tokens) > maxPendingStdio {
			c.e.pending.take(c.tokens[0])
			c.tokens = c.tokens[1:]
		}
		c.mu.Unlock()
		req.Extra = &mcp.RequestExtra{Header: http.Header{tokenHeader: {t}}}
	}
	return msg
}

// answer writes a response of the entry's own.
func (c *stdioConn) answer(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.err == nil || errors.Is(c.err, io.EOF) {
				return nil, io.EOF
			}
			return nil, c.err
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(_ context.Context, m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.out.Write(append(b, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	var err error
	c.closing.Do(func() {
		close(c.done)
		err = errors.Join(c.in.Close(), c.out.Close())
		c.mu.Lock()
		for _, t := range c.tokens {
			c.e.pending.take(t)
		}
		c.tokens = nil
		c.mu.Unlock()
	})
	return err
}

func (c *stdioConn) SessionID() string { return "" }

var errLineTooLong = errors.New("line too long")

// readLine returns the next line, at most MaxBytes long; a longer line is
// skipped whole and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= MaxBytes+1 {
			line = append(line, chunk...)
		} else {
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err == nil {
				return nil, errLineTooLong
			}
			return nil, err
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
