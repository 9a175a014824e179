package bridge

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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// maxEvent bounds one message of a passed-through response, as the SDK
// bounds an event.
const maxEvent = mcp.DefaultMaxEventSize

// sealTimeout bounds issuing the nonce of a confirmed call's round while
// a streamed answer is rewritten.
const sealTimeout = 5 * time.Second

// forwardedHeaders are the client's request headers a passed-through call
// carries to the upstream: the standard MCP headers and content
// negotiation. Credentials are never forwarded (the upstream gets its own,
// from the gateway's configuration).
func forwardedHeader(k string) bool {
	switch k {
	case "Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Method":
		return true
	}
	return strings.HasPrefix(k, "Mcp-Param-")
}

// passthrough forwards a 2026-07-28 client's tools/call to a 2026-07-28
// upstream over HTTP as it came, with the upstream's name for the tool in
// the body and in Mcp-Name, and streams the answer back as it comes:
// notifications (progress, log messages) and the final response byte for
// byte, except an input_required result, whose requestState is sealed into
// the gateway's own and whose keys are namespaced as on the decoded path.
// Such a request is answered on its own response stream, so nothing in it
// needs the gateway's state. It returns (nil, nil) once it has written the
// response, and an error only if it wrote nothing.
func (f *Forward) passthrough(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
	w := c.Wire
	body := w.Body
	if c.Target != c.Name {
		name, _ := json.Marshal(c.Target)
		params, err := rawjson.Set(w.Params, "name", name)
		if err == nil {
			body, err = rawjson.Set(w.Body, "params", params)
		}
		if err != nil {
			return nil, internalError("renaming the tool: %v", err)
		}
	}
	h := make(http.Header, 8)
	for k, v := range w.Header {
		if forwardedHeader(k) {
			h[k] = v
		}
	}
	h.Set("Mcp-Name", c.Target)
	resp, cancel, err := c.Upstream.Post(ctx, body, h)
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	defer cancel()
	defer resp.Body.Close()

	out := w.Response
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	for _, k := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			out.Header().Set(k, v)
		}
	}
	if resp.StatusCode >= 500 {
		// Nothing is written yet: a transient failure, for the retry
		// stage to decide on, as on the decoded path.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEvent))
		return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailHTTP5xx, Status: resp.StatusCode, Sent: true}
	}
	if resp.StatusCode != http.StatusOK || (ct != "application/json" && ct != "text/event-stream") {
		// A refusal (HTTP 400 with a JSON-RPC error, 404 for an unknown
		// method): the client gets what a direct call would have got.
		c.Outcome = "error"
		out.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(out, io.LimitReader(resp.Body, maxEvent))
		return nil, nil
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
		msg = f.adapt(c, msg)
		out.Header().Set("Content-Length", fmt.Sprint(len(msg)))
		out.WriteHeader(http.StatusOK)
		_, _ = out.Write(msg)
		return nil, nil
	}
	out.WriteHeader(http.StatusOK)
	flusher, _ := out.(http.Flusher)
	responded, err := f.streamEvents(c, bufio.NewReaderSize(resp.Body, 32<<10), out, flusher)
	if err != nil && ctx.Err() == nil {
		f.logger.Warn("passing an upstream's event stream through failed", "tool", c.Name, "error", err)
	}
	if !responded && ctx.Err() == nil {
		// The stream ended before the response, after the client got
		// its first bytes: the call cannot be retried, and whether it
		// took effect is unknown. The client is told so on the stream.
		c.Outcome = "unknown"
		id, _, _ := rawjson.Get(w.Body, "id")
		msg := ErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("upstream %q ended its answer to %s %q before the response: the outcome is unknown, and the call was not retried because its answer had started",
				c.Upstream.Name(), c.Method, clip(c.Name)),
			Data: json.RawMessage(`{"outcome":"unknown","retried":false}`)})
		_, _ = fmt.Fprintf(out, "event: message\ndata: %s\n\n", msg)
		if flusher != nil {
			flusher.Flush()
		}
	}
	return nil, nil
}

// streamEvents copies an event stream, event by event, adapting the
// response it carries, and reports whether it passed the response on.
func (f *Forward) streamEvents(c *pipeline.Call, r *bufio.Reader, w io.Writer, flusher http.Flusher) (responded bool, err error) {
	var (
		event []byte   // the event's lines as received
		data  [][]byte // its data lines
	)
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) && len(event) > 0 {
				var resp bool
				resp, err = f.writeEvent(c, w, event, data)
				responded = responded || resp
			}
			if errors.Is(err, io.EOF) {
				return responded, nil
			}
			return responded, err
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			if len(event) > 0 {
				resp, err := f.writeEvent(c, w, event, data)
				if err != nil {
					return responded, err
				}
				responded = responded || resp
				if flusher != nil {
					flusher.Flush()
				}
			}
			event, data = event[:0], data[:0]
			continue
		}
		if len(event)+len(line) > maxEvent {
			return responded, fmt.Errorf("an event longer than %d bytes", maxEvent)
		}
		event = append(event, line...)
		if v, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
}

// writeEvent writes one event: as received, unless its data is the
// response, which is adapted. It reports whether the event was the
// response.
func (f *Forward) writeEvent(c *pipeline.Call, w io.Writer, event []byte, data [][]byte) (bool, error) {
	response := false
	if len(data) > 0 {
		msg := bytes.Join(data, []byte("\n"))
		if isResponse(msg) {
			response = true
			adapted := f.adapt(c, msg)
			if !bytes.Equal(adapted, msg) || len(data) > 1 {
				_, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", adapted)
				return true, err
			}
		}
	}
	if !bytes.HasSuffix(event, []byte("\n")) {
		event = append(event, '\n')
	}
	_, err := w.Write(append(event, '\n'))
	return response, err
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
			if err != nil && len(line) > 0 && errors.Is(err, io.EOF) {
				return line, nil
			}
			return line, err
		}
	}
}

func isResponse(msg []byte) bool {
	if _, isReq, _ := rawjson.Get(msg, "method"); isReq {
		return false
	}
	_, res, _ := rawjson.Get(msg, "result")
	_, fail, _ := rawjson.Get(msg, "error")
	return res || fail
}

// adapt returns the response msg as the client gets it, and notes the
// call's outcome: an input_required result gets the gateway's sealed state
// and namespaced keys; anything else is sent as it came.
func (f *Forward) adapt(c *pipeline.Call, msg []byte) []byte {
	res, ok, _ := rawjson.Get(msg, "result")
	if !ok {
		c.Outcome = "error"
		return msg
	}
	if v, _, _ := rawjson.Get(res, "isError"); string(v) == "true" {
		c.Outcome = "tool_error"
	}
	if rt, _, _ := rawjson.GetString(res, "resultType"); rt != "input_required" && c.Wire != nil && c.Wire.Result != nil {
		// A stage (redact) sees the result before the client does.
		if out := c.Wire.Result(res); !bytes.Equal(out, res) {
			if m, err := rawjson.Set(msg, "result", out); err == nil {
				msg, res = m, out
			} else {
				return f.errorMessage(msg, internalError("rewriting the result: %v", err))
			}
		}
	}
	switch rt, _, _ := rawjson.GetString(res, "resultType"); rt {
	case "input_required":
	case "":
		// Every 2026-07-28 result has a resultType; add it if the
		// upstream left it out, as the decoded path does.
		if r, err := rawjson.Set(res, "resultType", json.RawMessage(`"complete"`)); err == nil {
			if out, err := rawjson.Set(msg, "result", r); err == nil {
				return out
			}
		}
		return msg
	default:
		return msg
	}
	c.Outcome = "input_required"
	state, _, _ := rawjson.GetString(res, "requestState")
	var qs []*upstream.Question
	if asks, ok, _ := rawjson.Get(res, "inputRequests"); ok {
		ms, err := rawjson.Members(asks)
		if err != nil {
			return f.errorMessage(msg, internalError("upstream %q sent malformed inputRequests", c.Upstream.Name()))
		}
		for _, m := range ms {
			qs = append(qs, &upstream.Question{Key: m.Key, Raw: m.Value})
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	token, err := f.seal(sctx, c, statePayload{Upstream: c.Upstream.Name(), State: state})
	if err != nil {
		return f.errorMessage(msg, internalError("sealing requestState: %v", err))
	}
	wrapped, err := json.Marshal(inputRequired(qs, token))
	if err == nil {
		var out []byte
		if out, err = rawjson.Set(msg, "result", wrapped); err == nil {
			return out
		}
	}
	return f.errorMessage(msg, internalError("rewriting input_required: %v", err))
}

// errorMessage replaces the response msg with a JSON-RPC error of the same
// id.
func (f *Forward) errorMessage(msg []byte, err error) []byte {
	id, _, _ := rawjson.Get(msg, "id")
	return ErrorResponse(id, err)
}

// ErrorResponse encodes a JSON-RPC error response to the request id: the
// code, message and data of a *jsonrpc.Error, else -32603.
func ErrorResponse(id json.RawMessage, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	e := wireError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		e = wireError{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, e})
	return b
}
