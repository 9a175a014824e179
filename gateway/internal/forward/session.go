package forward

//lint:file-ignore SA1019 the gateway passes logging through faithfully; protocol 2026-07-28 deprecates it (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// cancelTimeout bounds telling an upstream that a call was abandoned.
const cancelTimeout = 5 * time.Second

// idSeq makes the JSON-RPC ids of the gateway's side of an upstream
// session: strings no SDK uses (they number their requests).
type idSeq struct{ n atomic.Uint64 }

func (s *idSeq) next(kind string) json.RawMessage {
	return json.RawMessage(`"preflight-` + kind + `-` + strconv.FormatUint(s.n.Add(1), 10) + `"`)
}

// sessionPassable reports a call the session passthrough sends: a legacy
// client's tools/call of a tool whose upstream is a legacy one over
// streamable HTTP, without a progress token (the upstream's session is
// shared, and tokens must be unique in it) or keys that only a 2026-07-28
// request carries.
func sessionPassable(c *call.Call) bool {
	if c.Method != call.ToolsCall || c.Client.Modern() || c.RequestState != "" || len(c.InputResponses) > 0 {
		return false
	}
	if _, ok := c.Upstream.SessionPassthrough(); !ok {
		return false
	}
	return !mapsMeta(c)
}

// mapsMeta reports a legacy client's call whose _meta the decoded path
// rewrites: a progress token (replaced by one of the gateway's own), or
// keys that only a 2026-07-28 request carries.
func mapsMeta(c *call.Call) bool {
	if len(c.Meta) == 0 {
		return false
	}
	for _, k := range []string{"progressToken", mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel} {
		if _, has, _ := rawjson.Get(c.Meta, k); has {
			return true
		}
	}
	return false
}

// sessionPassthrough sends a legacy client's tools/call to a legacy
// upstream over streamable HTTP, re-encoded from what was judged, on the
// gateway's own session with the upstream, under an id of the gateway's
// (the upstream's session is shared by all the gateway's clients), with
// the upstream's name for the tool. Notifications on the call's stream go
// to the client's Conn; the upstream's questions are put to the client
// through its Conn and the answers, once they crossed the chain, posted
// back on the session; a question the client did not declare it can
// answer is refused to the upstream, as on the decoded path.
func (f *Forward) sessionPassthrough(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	upSession, ok := c.Upstream.SessionPassthrough()
	if !ok {
		return nil, upstreamError(c.Upstream, upstream.ErrSessionGone)
	}
	upID := f.seq.next("call")
	body := wire.Request(upID, c.Method, params(ctx, c))

	ctx, cancel := context.WithCancel(ctx)
	var questions sync.WaitGroup
	defer func() {
		cancel()
		questions.Wait()
	}()
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	answered := false
	defer func() {
		// The client went away or cancelled before the response: the
		// upstream may have the call (an SDK server answers with its first
		// message, so even a POST that got no headers may be running).
		if !answered && ctx.Err() != nil {
			f.cancelUpstream(c, upSession, upID)
		}
	}()
	resp, done, err := c.Upstream.PostSession(ctx, upSession, body, h, true)
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	defer done()
	defer resp.Body.Close()

	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEvent))
		return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailHTTP5xx, Status: resp.StatusCode, Sent: true}
	}
	if resp.StatusCode != http.StatusOK || (ct != "application/json" && ct != "text/event-stream") {
		// The upstream refused the request. Its HTTP status is about the
		// gateway's session with it, not the client's: the client gets a
		// JSON-RPC error.
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxEvent))
		if e := errorOf(msg); e != nil {
			return nil, e
		}
		return nil, internalError("upstream %q answered HTTP %d", c.Upstream.Name(), resp.StatusCode)
	}
	if ct == "application/json" {
		msg, err := io.ReadAll(io.LimitReader(resp.Body, maxEvent+1))
		if err != nil || len(msg) > maxEvent {
			return nil, internalError("upstream %q: reading the answer: %v", c.Upstream.Name(), err)
		}
		if id, _, _ := rawjson.Get(msg, "id"); !bytes.Equal(id, upID) {
			return nil, internalError("upstream %q answered with something else than the response", c.Upstream.Name())
		}
		answered = true
		return f.legacyResponse(c, msg)
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(resp.Body)
	defer func() { r.Reset(nil); readers.Put(r) }()
	var data []byte
	for {
		line, err := readLine(r)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if !errors.Is(err, io.EOF) {
				f.logger.Warn("reading an upstream's event stream failed", "tool", c.Name, "error", err)
			}
			return nil, &upstream.TransientError{Upstream: c.Upstream.Name(), Kind: upstream.FailConnection, Sent: true, Err: io.ErrUnexpectedEOF}
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) > 0 {
			if v, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
				if len(data)+len(v) > maxEvent {
					return nil, internalError("upstream %q sent an event longer than %d bytes", c.Upstream.Name(), maxEvent)
				}
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
			if !errors.Is(err, io.EOF) {
				continue
			}
		}
		if len(data) == 0 {
			continue
		}
		msg := data
		data = nil
		method, isMsg, _ := rawjson.GetString(msg, "method")
		if !isMsg {
			if id, _, _ := rawjson.Get(msg, "id"); bytes.Equal(id, upID) {
				answered = true
				return f.legacyResponse(c, msg)
			}
			continue // a response to something else: not the client's
		}
		id, isReq, _ := rawjson.Get(msg, "id")
		params, _, _ := rawjson.Get(msg, "params")
		if !isReq {
			c.Client.Conn.Notify(ctx, method, params)
			continue
		}
		// A question on the call's own stream.
		qid := bytes.Clone(id)
		questions.Go(func() { f.relayQuestion(ctx, c, upSession, method, params, qid) })
	}
}

// relayQuestion puts a legacy upstream's question to the client and posts
// the answer, once it crossed the chain, back on the upstream's session;
// a question the client cannot answer is refused to the upstream.
func (f *Forward) relayQuestion(ctx context.Context, c *call.Call, upSession, method string, params, id json.RawMessage) {
	post := func(ctx context.Context, body []byte) error {
		return f.postAnswer(ctx, c.Upstream, upSession, body)
	}
	refuse := func(msg string) {
		_ = post(ctx, wire.ErrorResponse(id, internalError("%s", msg)))
	}
	if !declared(method, c.Client.Capabilities) {
		f.logger.Info("upstream question refused: the client did not declare it", "tool", c.Name, "method", method)
		refuse("the client did not answer " + method)
		return
	}
	q, err := upstream.DecodeQuestion(method, params)
	if err != nil {
		refuse("the gateway could not read the question: " + err.Error())
		return
	}
	resp, err := c.Client.Conn.Ask(ctx, method, q)
	if err != nil {
		if ctx.Err() == nil {
			f.logger.Info("question to the client failed", "tool", c.Name, "method", method, "error", text.Sanitize(err.Error()))
			refuse("the client did not answer " + method)
		}
		return
	}
	err = f.answer(ctx, c, method, resp, func(ctx context.Context, judged json.RawMessage) error {
		return post(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+string(judged)+`}`))
	})
	if err != nil {
		f.logger.Info("an answer was not passed to the upstream", "tool", c.Name, "method", method, "error", text.Sanitize(err.Error()))
		refuse("the client's answer was refused")
	}
}

// postAnswer sends a message (a response to an upstream's question, or a
// notification) on the gateway's session with the upstream.
func (f *Forward) postAnswer(ctx context.Context, up *upstream.Conn, upSession string, body []byte) error {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	resp, done, err := up.PostSession(context.WithoutCancel(ctx), upSession, body, h, false)
	if err != nil {
		f.logger.Info("an answer could not reach the upstream", "upstream", up.Name(), "error", text.Sanitize(err.Error()))
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEvent))
	resp.Body.Close()
	done()
	return nil
}

// legacyResponse returns the result of the response msg, or its error.
func (f *Forward) legacyResponse(c *call.Call, msg []byte) (json.RawMessage, error) {
	res, ok, _ := rawjson.Get(msg, "result")
	if !ok {
		c.Outcome = "error"
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
	return bytes.Clone(res), nil
}

// cancelUpstream tells the upstream that the client abandoned the call.
func (f *Forward) cancelUpstream(c *call.Call, upSession string, upID json.RawMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	body := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(upID) + `,"reason":"the client cancelled the call"}}`)
	_ = f.postAnswer(ctx, c.Upstream, upSession, body)
}

// declared reports whether a client with caps can answer a request of
// method: elicitation, sampling and roots need the capability; anything
// else (ping) any client answers.
func declared(method string, caps *mcp.ClientCapabilities) bool {
	switch method {
	case upstream.MethodElicit:
		return caps != nil && caps.Elicitation != nil
	case upstream.MethodCreateMessage:
		return caps != nil && caps.Sampling != nil
	case upstream.MethodListRoots:
		return caps != nil && caps.RootsV2 != nil
	}
	return true
}
