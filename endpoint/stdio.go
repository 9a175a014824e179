package endpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one stdio message, as the SDK's own stdio transport does.
const maxLine = mcp.DefaultMaxLineLength

// stdioTransport is the SDK's newline-delimited stdio transport behind a
// guard: the SDK ends the connection on a line it cannot decode, which
// loses the session for one bad message. The guard answers such a line
// itself, -32700 when it is not JSON and -32600 when it is JSON but not a
// JSON-RPC message, drops it, and keeps the connection. A JSON array (a
// batch, which protocol 2025-06-18 removed, or "[]") is answered with
// -32600 too, in every protocol version, as the HTTP handler answers it.
func stdioTransport(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{
		Reader: &lineGuard{src: bufio.NewReaderSize(in, 64<<10), in: in, reply: w},
		Writer: w,
	}
}

// lockedWriter makes each Write atomic, so that the guard's replies and
// the SDK's messages never interleave within a line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// lineGuard passes through the lines that are JSON-RPC messages and
// answers the others.
type lineGuard struct {
	src     *bufio.Reader
	in      io.Closer
	reply   io.Writer
	pending []byte // the rest of an admitted line
	err     error  // the error that ended src, returned once pending is read
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		var line []byte
		line, g.err = readLine(g.src)
		if errors.Is(g.err, errLineTooLong) {
			g.answer(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: message longer than %d bytes", maxLine))
			g.err = nil
			continue
		}
		if msg := bytes.TrimSpace(line); len(msg) > 0 && g.admit(msg) {
			g.pending = line
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

func (g *lineGuard) Close() error { return g.in.Close() }

var errLineTooLong = errors.New("line too long")

// batchMessage answers a JSON array, on stdio and over HTTP.
const batchMessage = "Invalid Request: JSON-RPC batches (a JSON array) are not supported; send one JSON-RPC message at a time"

// readLine returns the next line with its newline, at most maxLine bytes;
// a longer line is skipped whole and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
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

// admit reports whether msg is for the SDK; otherwise it answers it.
func (g *lineGuard) admit(msg []byte) bool {
	if msg[0] == '[' && json.Valid(msg) {
		g.answer(nil, jsonrpc.CodeInvalidRequest, batchMessage)
		return false
	}
	if _, err := jsonrpc.DecodeMessage(msg); err == nil {
		return true
	}
	if !json.Valid(msg) {
		g.answer(nil, jsonrpc.CodeParseError, "Parse error: the message is not valid JSON")
		return false
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(msg, &probe)
	id := probe.ID
	if len(id) == 0 || (id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-') {
		id = nil // not a usable id: answer with null
	}
	g.answer(id, jsonrpc.CodeInvalidRequest, `Invalid Request: a JSON-RPC 2.0 message needs "jsonrpc":"2.0" and a "method" (request, notification) or a "result"/"error" (response)`)
	return false
}

// answer writes one error response.
func (g *lineGuard) answer(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(errorReply{JSONRPC: "2.0", ID: id, Error: wireError{Code: code, Message: message}})
	_, _ = g.reply.Write(append(b, '\n'))
}

type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   wireError       `json:"error"`
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}
