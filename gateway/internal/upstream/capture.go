package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// The SDK client decodes every result into its own types, which lose what
// they do not know (unknown fields, the exact bytes of numbers, an explicit
// false the types cannot tell from an absent value). The gateway passes
// results through unchanged, so it captures the raw result of each request
// it sends: the caller puts a sink in the request's context, and the
// transport fills it with the result's bytes as they arrive, before the SDK
// decodes them.
//
// Two places can see those bytes. For stdio, in-memory and HTTP+SSE
// connections, a wrapper around the mcp.Connection (captureConn). The
// streamable HTTP connection cannot be wrapped (the SDK tells it about the
// session through a method only its own type has), so there an
// http.RoundTripper reads the response body alongside the SDK
// (captureTransport). See docs/design.md, rough edges.

// sink receives the raw result of one request.
type sink struct {
	mu     sync.Mutex
	raw    json.RawMessage
	before int64     // flow notifications read before the response
	cache  cacheInfo // cache-control as the upstream sent it, if any
	forget func()    // unregisters the sink from a connection, if set

	// What became of the request, to classify its failure (failure.go).
	written  bool // the request was written in full to the transport
	answered bool // a response to it came (a result or a JSON-RPC error)
	status   int  // an HTTP POST's 5xx status, if one came
}

func (s *sink) answer() {
	s.mu.Lock()
	s.answered = true
	s.mu.Unlock()
}

// cacheInfo is the ttlMs and cacheScope of a result.
type cacheInfo struct {
	seen  bool
	ttlMs int
	scope string
}

func (s *sink) set(raw []byte, f *flow) {
	s.mu.Lock()
	if s.raw == nil {
		s.raw = bytes.Clone(raw)
		if f != nil {
			s.before = f.observed.Load()
		}
	}
	s.mu.Unlock()
}

// settle waits until the notifications read before the response are
// handled (see flow).
func (s *sink) settle(ctx context.Context, f *flow) {
	s.mu.Lock()
	n := s.before
	s.mu.Unlock()
	if f != nil && n > 0 {
		f.wait(ctx, n)
	}
}

// result returns the captured bytes, nil if none came.
func (s *sink) result() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

// done releases the sink's registration.
func (s *sink) done() {
	s.mu.Lock()
	f := s.forget
	s.forget = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

type sinkKey struct{}

// withSink returns a context whose request results are captured in the
// returned sink. Call sink.done when the request is over.
func withSink(ctx context.Context) (context.Context, *sink) {
	s := &sink{}
	return context.WithValue(ctx, sinkKey{}, s), s
}

func sinkFrom(ctx context.Context) *sink {
	s, _ := ctx.Value(sinkKey{}).(*sink)
	return s
}

// captureConn captures the results of requests whose context carries a sink.
type captureConn struct {
	mcp.Connection
	flow    *flow
	mu      sync.Mutex
	waiting map[jsonrpc.ID]*sink
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	s := sinkFrom(ctx)
	req, isReq := msg.(*jsonrpc.Request)
	if s == nil || !isReq || !req.IsCall() {
		return c.Connection.Write(ctx, msg)
	}
	id := req.ID
	c.mu.Lock()
	if c.waiting == nil {
		c.waiting = map[jsonrpc.ID]*sink{}
	}
	c.waiting[id] = s
	c.mu.Unlock()
	s.mu.Lock()
	s.forget = func() { c.mu.Lock(); delete(c.waiting, id); c.mu.Unlock() }
	s.mu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		s.done()
		return err
	}
	s.mu.Lock()
	s.written = true
	s.mu.Unlock()
	return nil
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() && flowMethod(m.Method) {
			c.flow.observe()
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		s := c.waiting[m.ID]
		delete(c.waiting, m.ID)
		c.mu.Unlock()
		if s != nil {
			s.answer()
			if m.Error == nil {
				s.set(m.Result, c.flow)
			}
		}
	}
	return msg, err
}

// captureTransport captures, from the body of a streamable HTTP POST whose
// context carries a sink, the result of the response to that POST's
// request: the JSON body, or the first server-sent event holding a
// JSON-RPC response. It also counts the flow notifications of every event
// stream (see flow).
type captureTransport struct {
	base http.RoundTripper
	flow *flow
}

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := sinkFrom(req.Context())
	if s != nil && req.Method == http.MethodPost {
		req = req.WithContext(traceWrites(req.Context(), s))
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && s != nil && req.Method == http.MethodPost && resp.StatusCode >= 500 {
		s.mu.Lock()
		s.status = resp.StatusCode
		s.mu.Unlock()
	}
	if err != nil || resp.StatusCode/100 != 2 || resp.Body == nil {
		return resp, err
	}
	switch ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(strings.ToLower(ct)) {
	case "application/json":
		if s != nil {
			resp.Body = &jsonTee{body: resp.Body, sink: s, flow: t.flow}
		}
	case "text/event-stream":
		resp.Body = &sseTee{body: resp.Body, sink: s, flow: t.flow}
	}
	return resp, nil
}

// maxCapture bounds what a tee buffers for one message, as the SDK bounds
// an event; an SSE tee keeps at most keepBuffer between events.
const (
	maxCapture = mcp.DefaultMaxEventSize
	keepBuffer = 64 << 10
)

// jsonTee buffers a JSON response body as the SDK reads it and captures
// its result at the end.
type jsonTee struct {
	body io.ReadCloser
	sink *sink
	flow *flow
	buf  []byte
	over bool
}

func (j *jsonTee) Read(p []byte) (int, error) {
	n, err := j.body.Read(p)
	if !j.over {
		if len(j.buf)+n > maxCapture {
			j.over, j.buf = true, nil
		} else {
			j.buf = append(j.buf, p[:n]...)
		}
	}
	if err == io.EOF && !j.over {
		captureMessage(j.sink, j.flow, j.buf)
		j.buf = nil
	}
	return n, err
}

func (j *jsonTee) Close() error { return j.body.Close() }

// sseTee parses the event stream as the SDK reads it, counts its flow
// notifications and captures the first response it carries, if it has a
// sink.
type sseTee struct {
	body    io.ReadCloser
	sink    *sink // nil: count only
	flow    *flow
	line    []byte
	data    []byte
	over    bool
	settled bool // a response was seen
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	s.feed(p[:n])
	return n, err
}

func (s *sseTee) Close() error { return s.body.Close() }

func (s *sseTee) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.appendLine(b)
			return
		}
		s.appendLine(b[:i])
		s.endLine()
		b = b[i+1:]
	}
}

func (s *sseTee) appendLine(b []byte) {
	if s.over || len(s.line)+len(s.data)+len(b) > maxCapture {
		s.over = true
		return
	}
	s.line = append(s.line, b...)
}

func (s *sseTee) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	s.line = s.line[:0]
	switch {
	case len(line) == 0: // end of event
		if !s.over && len(s.data) > 0 {
			if s.settled || s.sink == nil {
				countMessage(s.flow, s.data)
			} else if captureMessage(s.sink, s.flow, s.data) {
				s.settled = true
			}
		}
		s.data, s.over = s.data[:0], false
		// Buffers grown for a long event are not kept for the rest of the
		// stream.
		if cap(s.data) > keepBuffer {
			s.data = nil
		}
		if cap(s.line) > keepBuffer {
			s.line = nil
		}
	case s.over: // the event is too long to capture: keep none of it
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[5:], []byte(" "))
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, v...)
	}
}

// captureMessage captures the result of msg if it is a JSON-RPC response,
// and reports whether it was one; it counts a flow notification.
func captureMessage(s *sink, f *flow, msg []byte) bool {
	if countMessage(f, msg) {
		return false
	}
	if res, ok, _ := rawjson.Get(msg, "result"); ok {
		s.set(res, f)
		s.answer()
		return true
	}
	_, isErr, _ := rawjson.Get(msg, "error")
	if isErr {
		s.answer()
	}
	return isErr
}

// countMessage counts msg if it is a flow notification and reports whether
// it is a request or notification.
func countMessage(f *flow, msg []byte) bool {
	m, ok, _ := rawjson.GetString(msg, "method")
	if !ok {
		return false
	}
	if _, hasID, _ := rawjson.Get(msg, "id"); !hasID && flowMethod(m) && f != nil {
		f.observe()
	}
	return true
}

// noCache is a sending middleware for the upstream client: it notes, in the
// request's sink, the cache-control of list and read results, then sets
// their time to live to zero so that the SDK's client-side cache never
// answers in the upstream's place. The gateway forwards each list and read
// to the upstream (or serves its own aggregate) and derives cache-control
// for its clients itself.
func noCache(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		var c *mcp.Cacheable
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			c = &r.Cacheable
		case *mcp.ListPromptsResult:
			c = &r.Cacheable
		case *mcp.ListResourcesResult:
			c = &r.Cacheable
		case *mcp.ListResourceTemplatesResult:
			c = &r.Cacheable
		case *mcp.ReadResourceResult:
			c = &r.Cacheable
		default:
			return res, nil
		}
		if s := sinkFrom(ctx); s != nil {
			s.mu.Lock()
			s.cache = cacheInfo{seen: true, ttlMs: c.TTLMs, scope: c.CacheScope}
			s.mu.Unlock()
		}
		c.TTLMs = 0
		return res, nil
	}
}
