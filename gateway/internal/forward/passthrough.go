package forward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// maxEvent bounds one message of a passed-through response, as the SDK
// bounds an event.
const maxEvent = mcp.DefaultMaxEventSize

// sealTimeout bounds issuing the nonce of a confirmed call's round while
// an answer is adapted.
const sealTimeout = 5 * time.Second

// readers pools the buffered readers of upstream event streams.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// headers returns the headers of the passed-through request, made from
// what was judged: the standard ones from the call, and the Mcp-Param
// headers from its arguments as the upstream's tool mirrors them. The
// client's own are not forwarded, nor its credentials: the gateway knows
// the tool's schema, so a header it mirrors nothing into carries a value
// nobody judged, which a router behind the gateway could act on.
func headers(c *call.Call) http.Header {
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {c.Client.Version},
		"Mcp-Method":           {c.Method},
		"Mcp-Name":             {c.Target},
	}
	var tool *mcp.Tool
	if c.Tool != nil {
		tool = c.Tool.Tool
	}
	for k, v := range wire.ParamHeaders(tool, c.Arguments) {
		h[k] = v
	}
	return h
}

// passable reports a call the passthrough sends: a 2026-07-28 client's
// first tools/call over HTTP, of a tool whose upstream speaks 2026-07-28
// over streamable HTTP.
func passable(c *call.Call) bool {
	return c.Method == call.ToolsCall && c.Client.Modern() && c.Client.Header != nil &&
		c.RequestState == "" && len(c.InputResponses) == 0 && c.Upstream.Passthrough()
}

// passthrough sends the call to a 2026-07-28 upstream over HTTP, re-encoded
// from what was judged (the upstream's name for the tool in the body and in
// Mcp-Name, headers made from the call), without the SDK's types: the
// upstream's notifications go to the client's Conn as they come, and its
// response is returned, an input_required one with its requestState sealed
// into the gateway's own and its keys namespaced as on the decoded path.
func (f *Forward) passthrough(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	body := wire.Request(json.RawMessage("1"), c.Method, params(ctx, c))
	msg, err := f.roundTrip(ctx, c, body, headers(c))
	if err != nil {
		return nil, err
	}
	return f.response(c, msg)
}

// roundTrip posts body to a 2026-07-28 upstream and returns its response
// message, passing the notifications before it to the client's Conn.
func (f *Forward) roundTrip(ctx context.Context, c *call.Call, body []byte, h http.Header) ([]byte, error) {
	resp, cancel, err := c.Upstream.Post(ctx, body, h)
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	defer cancel()
	defer resp.Body.Close()

	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEvent))
		return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailHTTP5xx, Status: resp.StatusCode, Sent: true}
	}
	if resp.StatusCode != http.StatusOK || (ct != "application/json" && ct != "text/event-stream") {
		// A refusal (HTTP 400 with a JSON-RPC error, 404 for an unknown
		// method): the client gets the upstream's error.
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxEvent))
		if e := errorOf(msg); e != nil {
			return nil, e
		}
		return nil, internalError("upstream %q answered HTTP %d", c.Upstream.Name(), resp.StatusCode)
	}
	if ct == "application/json" {
		msg, err := io.ReadAll(io.LimitReader(resp.Body, maxEvent+1))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailConnection, Sent: true, Err: err}
		}
		if len(msg) > maxEvent {
			return nil, internalError("upstream %q: an answer longer than %d bytes", c.Upstream.Name(), maxEvent)
		}
		return msg, nil
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(resp.Body)
	defer func() { r.Reset(nil); readers.Put(r) }()
	msg, err := f.streamEvents(ctx, c, r)
	if msg != nil {
		return msg, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// The stream ended before the response: whether the call took effect
	// is unknown; the retry decides by the call's idempotency.
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailConnection, Sent: true, Err: err}
}

// streamEvents reads an event stream, event by event, passing the
// notifications to the client's Conn, until the response, which it
// returns (nil if the stream ended first).
func (f *Forward) streamEvents(ctx context.Context, c *call.Call, r *bufio.Reader) (json.RawMessage, error) {
	var data []byte
	for {
		line, err := readLine(r)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if errors.Is(err, io.EOF) && len(data) > 0 {
				if msg := f.event(ctx, c, data); msg != nil {
					return msg, nil
				}
			}
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, err
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			if len(data) > 0 {
				if msg := f.event(ctx, c, data); msg != nil {
					return msg, nil
				}
			}
			data = data[:0]
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			continue
		}
		if v, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
			if len(data)+len(v) > maxEvent {
				return nil, fmt.Errorf("an event longer than %d bytes", maxEvent)
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
		if errors.Is(err, io.EOF) {
			if len(data) > 0 {
				if msg := f.event(ctx, c, data); msg != nil {
					return msg, nil
				}
			}
			return nil, nil
		}
	}
}

// event handles one message of an upstream's stream: a notification goes
// to the client; the response is returned (a copy).
func (f *Forward) event(ctx context.Context, c *call.Call, msg []byte) json.RawMessage {
	method, isMsg, _ := rawjson.GetString(msg, "method")
	if !isMsg {
		_, res, _ := rawjson.Get(msg, "result")
		_, fail, _ := rawjson.Get(msg, "error")
		if res || fail {
			return bytes.Clone(msg)
		}
		return nil
	}
	if _, isReq, _ := rawjson.Get(msg, "id"); isReq {
		// A 2026-07-28 upstream asks in input_required, not with requests.
		f.logger.Info("upstream request on a call's stream dropped", "tool", c.Name, "method", method)
		return nil
	}
	params, _, _ := rawjson.Get(msg, "params")
	c.Client.Conn.Notify(ctx, method, bytes.Clone(params))
	return nil
}

// readLine reads one line, newline included, bounded by maxEvent.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxEvent {
			return nil, fmt.Errorf("a line longer than %d bytes", maxEvent)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// response returns the result of the response msg, adapted for the client
// (an input_required one gets the gateway's sealed state and namespaced
// keys), or its error.
func (f *Forward) response(c *call.Call, msg []byte) (json.RawMessage, error) {
	res, ok, _ := rawjson.Get(msg, "result")
	if !ok {
		if e := errorOf(msg); e != nil {
			return nil, e
		}
		return nil, internalError("upstream %q sent a malformed response", c.Upstream.Name())
	}
	if !rawjson.IsObject(res) {
		return nil, internalError("upstream %q sent a result that is not an object", c.Upstream.Name())
	}
	if call.IsToolError(res) {
		c.Outcome = "tool_error"
	}
	if !call.IsInputRequired(res) {
		return res, nil
	}
	c.Outcome = "input_required"
	state, _, _ := rawjson.GetString(res, "requestState")
	var qs []*upstream.Question
	if asks, ok, _ := rawjson.Get(res, "inputRequests"); ok {
		ms, err := rawjson.Members(asks)
		if err != nil {
			return nil, internalError("upstream %q sent malformed inputRequests", c.Upstream.Name())
		}
		for _, m := range ms {
			qs = append(qs, &upstream.Question{Key: m.Key, Raw: m.Value})
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	token, err := f.seal(sctx, c, statePayload{Upstream: c.Upstream.Name(), State: state})
	if err != nil {
		return nil, internalError("sealing requestState: %v", err)
	}
	return inputRequired(qs, token), nil
}

// errorOf returns the JSON-RPC error a response carries, nil if none.
func errorOf(msg []byte) error {
	e, ok, _ := rawjson.Get(msg, "error")
	if !ok {
		return nil
	}
	var je jsonrpc.Error
	if json.Unmarshal(e, &je) != nil || je.Message == "" {
		return nil
	}
	return &jsonrpc.Error{Code: je.Code, Message: text.Sanitize(text.Clip(je.Message, quoteLimit)), Data: je.Data}
}
