package entry

//lint:file-ignore SA1019 a legacy session's log level is read to filter the log messages of its calls as the SDK does; protocol 2026-07-28 deprecates logging (SEP-2577) but 2025-11-25 clients still set it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// Bounds of the questions the entry has put to legacy clients and waits
// on: over all sessions, one principal's, and one session's (the clients
// of an anonymous gateway are one principal).
const (
	maxWaiting             = 4096
	maxWaitingPerPrincipal = 256
	maxWaitingPerSession   = 64
)

// Handler returns the entry over HTTP in front of sdk, the SDK server's
// streamable HTTP handler (both eras on one URL). Every POST is read once
// and refused when it is not one unambiguous JSON-RPC message (HTTP 400,
// with the JSON-RPC error naming the member). A tools/call the Router
// allows is served here, without the SDK: a 2026-07-28 client's, and a
// legacy client's in a session the SDK holds for the same principal; the
// answers a legacy client sends to the questions of such calls, and its
// cancellations of them, are taken here too. Everything else goes to sdk,
// with the reading for [Entry.Middleware].
func (e *Entry) Handler(sdk http.Handler) http.Handler {
	return &httpEntry{e: e, sdk: sdk}
}

type httpEntry struct {
	e   *Entry
	sdk http.Handler
}

func (h *httpEntry) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w, bounded := rw.(*deadlineWriter)
	if !bounded { // not under WriteDeadlines
		w = withWriteDeadlines(rw)
		defer w.disarm()
	}
	r.Header.Del(tokenHeader)
	session := r.Header.Get("Mcp-Session-Id")
	version := r.Header.Get("Mcp-Protocol-Version")
	legacy := session != "" && !modernVersion(version)
	switch {
	case r.Method == http.MethodDelete && legacy:
		h.e.live.endSession(session, principalOf(r))
		h.e.checked.forget(session) // whoever asks: the next call is checked again
		h.sdk.ServeHTTP(w, r)
		return
	case r.Method != http.MethodPost:
		h.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBytes+1))
	r.Body.Close()
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	msg, err := Parse(body)
	if err != nil {
		h.e.refuse(w, err)
		return
	}
	if legacy {
		switch {
		case msg.Method == "" && h.e.live.deliver(session, principalOf(r), msg):
			w.WriteHeader(http.StatusAccepted)
			return
		case msg.Method == "notifications/cancelled" && h.e.live.cancel(session, principalOf(r), msg.Params):
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	if msg.Method == call.ToolsCall && msg.ID != nil && h.direct(w, r, msg, session, legacy) {
		return
	}
	if forwarded(msg.Method) {
		token := h.e.pending.put(msg, true)
		defer h.e.pending.take(token)
		r.Header.Set(tokenHeader, token)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.sdk.ServeHTTP(w, r)
}

// refuse answers a message Parse refused.
func (e *Entry) refuse(w http.ResponseWriter, err error) {
	var id json.RawMessage
	code := int64(jsonrpc.CodeInvalidRequest)
	msg := err.Error()
	if pe, ok := err.(*Error); ok {
		id, code, msg = pe.ID, pe.Code, pe.Message
	}
	e.logger.Info("request refused", "code", code, "reason", msg)
	body := wire.ErrorResponse(id, &jsonrpc.Error{Code: code, Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// principalOf returns the authenticated user of an HTTP request, "" when
// anonymous.
func principalOf(r *http.Request) string {
	p, _ := auth.FromContext(r.Context())
	return p.Name
}

// direct serves a tools/call without the SDK, if it may be; it reports
// whether it did.
func (h *httpEntry) direct(w http.ResponseWriter, r *http.Request, msg *Message, session string, legacy bool) bool {
	e := h.e
	if e.router == nil || !msg.HasName || msg.HasRequestState || len(msg.InputResponses) > 0 {
		return false
	}
	principal := principalOf(r)
	version := r.Header.Get("Mcp-Protocol-Version")
	client := &call.Client{Version: version, Principal: principal, Header: r.Header}
	if legacy {
		if _, ok := e.router.Direct(msg.Name, false); !ok {
			return false
		}
		ss := e.checked.check(h.sdk, r, session, principal, e.server)
		if ss == nil {
			return false
		}
		init := ss.InitializeParams()
		client.Capabilities = init.Capabilities
		client.SessionID = session
		if client.Version == "" {
			client.Version = init.ProtocolVersion
		}
	}
	var tool *mcp.Tool
	if !legacy {
		if session != "" || !modernVersion(version) {
			return false
		}
		var ok bool
		if tool, ok = e.router.Direct(msg.Name, true); !ok {
			return false
		}
		client.Capabilities = metaCapabilities(msg.Meta)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	conn := &httpConn{e: e, w: w, session: session, principal: principal, rounds: !legacy, id: msg.ID, cancel: cancel}
	client.Conn = conn
	if !legacy {
		// The headers must say what the body says: routers between the
		// client and the gateway may have acted on them.
		if err := CheckHeaders(r.Header, msg, tool); err != nil {
			conn.finish(nil, err)
			return true
		}
	}
	c, err := CallOf(msg, client)
	if err != nil {
		conn.finish(nil, err)
		return true
	}
	if legacy {
		key := liveKey{session, string(msg.ID)}
		if !e.live.start(key, principal, cancel) {
			conn.finish(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a request with this id is already in progress"})
			return true
		}
		defer e.live.end(key)
	}
	res, err := e.chain.Serve(ctx, c)
	if err == nil {
		res = call.ForClient(client, res)
	}
	conn.finish(res, err)
	return true
}

// metaCapabilities decodes the client capabilities a 2026-07-28 request
// declares in its _meta; nil when it declares none.
func metaCapabilities(meta json.RawMessage) *mcp.ClientCapabilities {
	raw, ok, _ := rawjson.Get(meta, mcp.MetaKeyClientCapabilities)
	if !ok {
		return nil
	}
	var caps mcp.ClientCapabilities
	if json.Unmarshal(raw, &caps) != nil {
		return nil
	}
	return &caps
}

// httpConn reaches the client of a tools/call the entry serves itself, on
// the response to its POST: notifications and (legacy) questions as
// events, the result as the last event, or as a JSON response when
// nothing came before it.
type httpConn struct {
	e         *Entry
	w         http.ResponseWriter
	session   string
	principal string
	rounds    bool
	id        json.RawMessage
	cancel    context.CancelFunc // ends the call when the client stops reading

	mu        sync.Mutex
	streaming bool
	done      bool
}

func (h *httpConn) Ask(ctx context.Context, method string, params mcp.InputRequest) (mcp.InputResponse, error) {
	if h.rounds {
		return nil, call.ErrRound
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	qid := json.RawMessage(`"preflight-q-` + strconv.FormatUint(h.e.seq.Add(1), 10) + `"`)
	key := liveKey{h.session, string(qid)}
	ch, ok := h.e.live.wait(key, h.principal)
	if !ok {
		return nil, fmt.Errorf("the gateway cannot put more questions to clients now (at most %d waiting, %d for one user, %d in one session)", maxWaiting, maxWaitingPerPrincipal, maxWaitingPerSession)
	}
	defer h.e.live.unwait(key, h.principal)
	m, _ := json.Marshal(method)
	if !h.event([]byte(`{"jsonrpc":"2.0","id":` + string(qid) + `,"method":` + string(m) + `,"params":` + string(p) + `}`)) {
		return nil, call.ErrCannotAsk
	}
	select {
	case ans := <-ch:
		if ans.Error != nil {
			return nil, fmt.Errorf("the client answered %s with an error: %s", method, show(ans.Error, false))
		}
		r, err := upstream.DecodeAnswer(params, ans.Result)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", method, text.Clip(err.Error(), 200))
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *httpConn) Notify(_ context.Context, method string, params json.RawMessage) {
	if !h.rounds && method == "notifications/message" {
		level, _, _ := rawjson.GetString(params, "level")
		if !h.e.live.wantsLog(h.session, mcp.LoggingLevel(level)) {
			return
		}
	}
	m, _ := json.Marshal(method)
	msg := `{"jsonrpc":"2.0","method":` + string(m)
	if len(params) > 0 {
		msg += `,"params":` + string(params)
	}
	h.event([]byte(msg + "}"))
}

func (h *httpConn) Completed(ctx context.Context, id string) {
	if h.rounds {
		return
	}
	p, _ := json.Marshal(mcp.ElicitationCompleteParams{ElicitationID: id})
	h.Notify(ctx, "notifications/elicitation/complete", p)
}

// event writes msg as an event of the response's stream, starting it; it
// reports false once the response is done.
func (h *httpConn) event(msg []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false
	}
	if !h.streaming {
		h.w.Header().Set("Content-Type", "text/event-stream")
		h.w.Header().Set("Cache-Control", "no-cache")
		h.w.WriteHeader(http.StatusOK)
		h.streaming = true
	}
	if err := h.write(msg); err != nil {
		// The client stopped reading (WriteTimeout) or went away: the
		// response is over, and so is the call.
		h.done = true
		h.cancel()
		return false
	}
	return true
}

// write writes msg as an event and flushes it, within WriteTimeout.
func (h *httpConn) write(msg []byte) error {
	if _, err := fmt.Fprintf(h.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return err
	}
	return http.NewResponseController(h.w).Flush()
}

// finish writes the call's response: its result, or its error.
func (h *httpConn) finish(res json.RawMessage, err error) {
	var msg []byte
	if err != nil {
		msg = wire.ErrorResponse(h.id, err)
	} else {
		msg = make([]byte, 0, len(res)+len(h.id)+32)
		msg = append(msg, `{"jsonrpc":"2.0","id":`...)
		msg = append(msg, h.id...)
		msg = append(msg, `,"result":`...)
		msg = append(msg, res...)
		msg = append(msg, '}')
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	if h.streaming {
		_ = h.write(msg)
		return
	}
	h.w.Header().Set("Content-Type", "application/json")
	h.w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	h.w.WriteHeader(h.status(err))
	_, _ = h.w.Write(msg)
}

// status is the HTTP status of a response with err, as the SDK's server
// answers (SEP-2575): under 2026-07-28, 404 for an unknown method and 400
// for invalid params, an unsupported version, a missing capability or
// headers that do not match the body; 200 otherwise, and always for a
// legacy session.
func (h *httpConn) status(err error) int {
	var je *jsonrpc.Error
	if !h.rounds || !errors.As(err, &je) {
		return http.StatusOK
	}
	switch je.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
