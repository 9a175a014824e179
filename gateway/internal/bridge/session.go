package bridge

//lint:file-ignore SA1019 the gateway passes logging through faithfully; protocol 2026-07-28 deprecates it (SEP-2577) but clients and servers still use it during the deprecation window.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Bounds of the legacy session passthrough.
const (
	// maxQuestions bounds the questions of passed-through calls waiting
	// for their clients' answers, over all sessions.
	maxQuestions = 4096
	// cancelTimeout bounds telling an upstream that a call was abandoned.
	cancelTimeout = 5 * time.Second
)

// sessions is the state of legacy (2025-11-25) clients' calls passed
// through to legacy upstreams on the gateway's own session with them: the
// calls in flight (for notifications/cancelled), the questions upstreams
// asked on a call's stream (for the client's answer, which comes in a POST
// of its own), and each client session's log level.
type sessions struct {
	seq atomic.Uint64

	mu        sync.Mutex
	calls     map[callKey]context.CancelFunc
	questions map[callKey]*question // by client session and the id the client saw
	levels    map[string]mcp.LoggingLevel
}

// callKey names a request of a client session by its raw JSON id.
type callKey struct{ session, id string }

// question is an upstream's request forwarded to a client.
type question struct {
	call      callKey // the call it belongs to
	conn      *upstream.Conn
	upSession string
	upID      json.RawMessage
}

func (s *sessions) init() {
	s.calls = map[callKey]context.CancelFunc{}
	s.questions = map[callKey]*question{}
	s.levels = map[string]mcp.LoggingLevel{}
}

// id returns a new JSON-RPC id for the gateway's side of a session: a
// string no SDK uses (they number their requests).
func (s *sessions) id(kind string) json.RawMessage {
	return json.RawMessage(`"preflight-` + kind + `-` + strconv.FormatUint(s.seq.Add(1), 10) + `"`)
}

// EndSession forgets a legacy client session the client deleted: its calls
// passed through are cancelled (their upstreams told), its questions
// dropped.
func (f *Forward) EndSession(session string) {
	s := &f.sessions
	s.mu.Lock()
	for k, cancel := range s.calls {
		if k.session == session {
			cancel()
		}
	}
	for k := range s.questions {
		if k.session == session {
			delete(s.questions, k)
		}
	}
	delete(s.levels, session)
	s.mu.Unlock()
}

// TrackLogLevels is a receiving middleware for the gateway's SDK server: it
// notes each legacy session's logging/setLevel, so that log messages on a
// passed-through call's stream reach the client only at or above its level,
// as the SDK's own ServerSession.Log filters them. A session's level is
// forgotten when the session ends.
func (f *Forward) TrackLogLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p == nil || ss == nil || ss.ID() == "" {
			return res, err
		}
		id := ss.ID()
		s := &f.sessions
		s.mu.Lock()
		_, known := s.levels[id]
		s.levels[id] = p.Level
		s.mu.Unlock()
		if !known {
			// One goroutine per session that set a level, ending with it.
			go func() {
				_ = ss.Wait()
				s.mu.Lock()
				delete(s.levels, id)
				s.mu.Unlock()
			}()
		}
		return res, err
	}
}

// logLevels in the order of RFC 5424, least severe first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelIndex(l mcp.LoggingLevel) int {
	for i, v := range logLevels {
		if v == l {
			return i
		}
	}
	return -1
}

// wantsLog reports whether a log message at level reaches the client of
// session: not until it set a level (as the SDK's server), then at or
// above it.
func (s *sessions) wantsLog(session string, level mcp.LoggingLevel) bool {
	s.mu.Lock()
	min, ok := s.levels[session]
	s.mu.Unlock()
	return ok && levelIndex(level) >= levelIndex(min)
}

// Intercept serves a legacy client's POST that belongs to a passed-through
// call: the answer to a question its upstream asked, which goes to that
// upstream, or notifications/cancelled for the call, which ends it. It
// reports whether it answered the request; if not, the request is the SDK
// server's.
func (f *Forward) Intercept(w http.ResponseWriter, r *http.Request, session string, body []byte) bool {
	s := &f.sessions
	if method, ok, _ := rawjson.GetString(body, "method"); ok {
		if method != "notifications/cancelled" {
			return false
		}
		params, _, _ := rawjson.Get(body, "params")
		rid, ok, _ := rawjson.Get(params, "requestId")
		if !ok {
			return false
		}
		s.mu.Lock()
		cancel := s.calls[callKey{session, string(rid)}]
		s.mu.Unlock()
		if cancel == nil {
			return false
		}
		cancel()
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	id, ok, _ := rawjson.Get(body, "id")
	if !ok || len(id) == 0 || id[0] != '"' {
		return false
	}
	k := callKey{session, string(id)}
	s.mu.Lock()
	q := s.questions[k]
	delete(s.questions, k)
	s.mu.Unlock()
	if q == nil {
		return false
	}
	if _, dup, err := rawjson.Duplicate(body); err != nil || dup {
		f.logger.Info("a client's answer to an upstream's question was malformed; refused to the upstream", "session", session)
		body = errorAnswer(q.upID, "the client's answer was malformed")
	} else if body, err = rawjson.Set(body, "id", q.upID); err != nil {
		body = errorAnswer(q.upID, "the client's answer was malformed")
	}
	f.postAnswer(r.Context(), q, body)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// postAnswer sends a response to an upstream's question on the session it
// came on.
func (f *Forward) postAnswer(ctx context.Context, q *question, body []byte) {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	resp, done, err := q.conn.PostSession(context.WithoutCancel(ctx), q.upSession, body, h, false)
	if err != nil {
		f.logger.Info("an answer could not reach the upstream", "upstream", q.conn.Name(), "error", upstream.Sanitize(err.Error()))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxEvent))
	resp.Body.Close()
	done()
}

// errorAnswer is a JSON-RPC error response to id.
func errorAnswer(id json.RawMessage, msg string) []byte {
	return ErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg})
}

// sessionPassthrough forwards a legacy client's tools/call to a legacy
// upstream over streamable HTTP as it came, on the gateway's session with
// the upstream, under an id of the gateway's (the upstream's session is
// shared by all the gateway's clients), with the upstream's name for the
// tool; and streams the answer back on the client's own response stream:
// the response under the client's id, notifications as they came (log
// messages only at or above the client's level), and the upstream's
// questions under ids of the gateway's, whose answers [Forward.Intercept]
// sends back. A question the client did not declare it can answer is
// refused to the upstream, as on the decoded path.
func (f *Forward) sessionPassthrough(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
	w := c.Wire
	s := &f.sessions
	session := w.Header.Get("Mcp-Session-Id")
	upSession, ok := c.Upstream.SessionPassthrough()
	if !ok {
		return nil, upstreamError(c.Upstream, upstream.ErrSessionGone)
	}
	clientID, _, _ := rawjson.Get(w.Body, "id")
	upID := s.id("call")
	body, err := rawjson.Set(w.Body, "id", upID)
	if err == nil && c.Target != c.Name {
		name, _ := json.Marshal(c.Target)
		var params []byte
		if params, err = rawjson.Set(w.Params, "name", name); err == nil {
			body, err = rawjson.Set(body, "params", params)
		}
	}
	if err != nil {
		return nil, internalError("forwarding the call: %v", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := callKey{session, string(clientID)}
	s.mu.Lock()
	if _, busy := s.calls[key]; busy {
		s.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a request with this id is already in progress"}
	}
	s.calls[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, key)
		for k, q := range s.questions {
			if q.call == key {
				delete(s.questions, k)
			}
		}
		s.mu.Unlock()
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
	out := w.Response
	if ct == "application/json" {
		msg, err := io.ReadAll(io.LimitReader(resp.Body, maxEvent+1))
		if err != nil || len(msg) > maxEvent {
			return nil, internalError("upstream %q: reading the answer: %v", c.Upstream.Name(), err)
		}
		msg, answered = f.legacyResponse(c, msg, upID, clientID)
		if !answered {
			return nil, internalError("upstream %q answered with something else than the response", c.Upstream.Name())
		}
		out.Header().Set("Content-Type", "application/json")
		out.Header().Set("Content-Length", strconv.Itoa(len(msg)))
		out.WriteHeader(http.StatusOK)
		_, _ = out.Write(msg)
		return nil, nil
	}
	out.Header().Set("Content-Type", "text/event-stream")
	out.Header().Set("Cache-Control", "no-cache")
	out.WriteHeader(http.StatusOK)
	flusher, _ := out.(http.Flusher)
	r := bufio.NewReaderSize(resp.Body, 16<<10)
	var data []byte
	for !answered {
		line, err := readLine(r)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				f.logger.Warn("passing an upstream's event stream through failed", "tool", c.Name, "error", err)
			}
			if !answered && ctx.Err() == nil {
				// The stream ended without the response: the client
				// must not wait for it.
				_, _ = fmt.Fprintf(out, "event: message\ndata: %s\n\n", ErrorResponse(clientID, internalError("upstream %q ended the call without answering", c.Upstream.Name())))
				answered = true
			}
			return nil, nil
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) > 0 {
			if v, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
				if len(data)+len(v) > maxEvent {
					return nil, nil
				}
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
			continue
		}
		if len(data) == 0 {
			continue
		}
		msg := f.legacyEvent(ctx, c, data, upID, clientID, session, upSession, &answered)
		data = data[:0]
		if msg == nil {
			continue
		}
		if _, err := fmt.Fprintf(out, "event: message\ndata: %s\n\n", msg); err != nil {
			return nil, nil
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	return nil, nil
}

// legacyEvent returns what the client gets of one message of the
// upstream's stream (nil: nothing), and notes whether it was the response.
func (f *Forward) legacyEvent(ctx context.Context, c *pipeline.Call, msg, upID, clientID json.RawMessage, session, upSession string, answered *bool) []byte {
	method, isMsg, _ := rawjson.GetString(msg, "method")
	if !isMsg {
		out, ok := f.legacyResponse(c, msg, upID, clientID)
		if ok {
			*answered = true
			return out
		}
		return nil // a response to something else: not the client's
	}
	id, isReq, _ := rawjson.Get(msg, "id")
	if !isReq {
		if method == "notifications/message" {
			params, _, _ := rawjson.Get(msg, "params")
			level, _, _ := rawjson.GetString(params, "level")
			if !f.sessions.wantsLog(session, mcp.LoggingLevel(level)) {
				return nil
			}
		}
		return msg
	}
	// A question on the call's own stream.
	q := &question{call: callKey{session, string(clientID)}, conn: c.Upstream, upSession: upSession, upID: bytes.Clone(id)}
	if !declared(method, c.Client.Capabilities) {
		f.logger.Info("upstream question refused: the client did not declare it", "tool", c.Name, "method", method)
		f.postAnswer(ctx, q, errorAnswer(q.upID, "the client did not answer "+method))
		return nil
	}
	qid := f.sessions.id("q")
	out, err := rawjson.Set(msg, "id", qid)
	s := &f.sessions
	s.mu.Lock()
	full := len(s.questions) >= maxQuestions
	if err == nil && !full {
		s.questions[callKey{session, string(qid)}] = q
	}
	s.mu.Unlock()
	if err != nil || full {
		f.postAnswer(ctx, q, errorAnswer(q.upID, "the gateway cannot take more questions now"))
		return nil
	}
	return out
}

// legacyResponse returns the response msg to the call as the legacy
// client gets it (its id, no resultType) and whether msg is it.
func (f *Forward) legacyResponse(c *pipeline.Call, msg, upID, clientID json.RawMessage) ([]byte, bool) {
	id, _, _ := rawjson.Get(msg, "id")
	if !bytes.Equal(id, upID) {
		return nil, false
	}
	out, err := rawjson.Set(msg, "id", clientID)
	if err != nil {
		return ErrorResponse(clientID, internalError("upstream %q sent a malformed response", c.Upstream.Name())), true
	}
	res, ok, _ := rawjson.Get(out, "result")
	if !ok {
		c.Outcome = "error"
		return out, true
	}
	if v, _, _ := rawjson.Get(res, "isError"); string(v) == "true" {
		c.Outcome = "tool_error"
	}
	if _, has, _ := rawjson.Get(res, "resultType"); has {
		if r, err := rawjson.Delete(res, "resultType"); err == nil {
			if o, err := rawjson.Set(out, "result", r); err == nil {
				out, res = o, r
			}
		}
	}
	if c.Wire != nil && c.Wire.Result != nil {
		// A stage (redact) sees the result before the client does.
		if r := c.Wire.Result(res); !bytes.Equal(r, res) {
			o, err := rawjson.Set(out, "result", r)
			if err != nil {
				return ErrorResponse(clientID, internalError("rewriting the result: %v", err)), true
			}
			out = o
		}
	}
	return out, true
}

// cancelUpstream tells the upstream that the client abandoned the call.
func (f *Forward) cancelUpstream(c *pipeline.Call, upSession string, upID json.RawMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	body := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(upID) + `,"reason":"the client cancelled the call"}}`)
	f.postAnswer(ctx, &question{conn: c.Upstream, upSession: upSession, upID: upID}, body)
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

// errorOf returns the JSON-RPC error a refusal carries, nil if none.
func errorOf(msg []byte) error {
	e, ok, _ := rawjson.Get(msg, "error")
	if !ok {
		return nil
	}
	var je jsonrpc.Error
	if json.Unmarshal(e, &je) != nil || je.Message == "" {
		return nil
	}
	return &jsonrpc.Error{Code: je.Code, Message: upstream.Sanitize(clip(je.Message))}
}
