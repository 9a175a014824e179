package gateway

//lint:file-ignore SA1019 a legacy session's log level is read to filter the upstream's log messages as the SDK does; protocol 2026-07-28 deprecates logging (SEP-2577) but 2025-11-25 clients still set it.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/bridge"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// passthrough sends the commonest call, a 2026-07-28 client's first
// tools/call of a tool whose upstream speaks 2026-07-28 over streamable
// HTTP, down the call path without decoding it into the SDK's types: the
// request is read once, routed and resolved like any other call, and
// forwarded as it came (package bridge renames the tool and streams the
// answer back). The upstream validates what the SDK would have (the _meta
// of the request, its Mcp-Param headers against the tool's schema), so the
// client gets the answers a direct call would get. Everything else (calls of disclosed tools, which package disclose gates, other
// methods, legacy sessions, retries that carry requestState or
// inputResponses, which the gateway must open, and requests the gateway
// must refuse itself) goes to next, the SDK's handler, with the body as it
// came.
func (g *Gateway) passthrough(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("Mcp-Session-Id")
		legacy := session != "" && !modernVersion(r.Header.Get("Mcp-Protocol-Version"))
		switch {
		case legacy && r.Method == http.MethodDelete:
			g.checked.forget(session)
			g.forward.EndSession(session)
			next.ServeHTTP(w, r)
			return
		case legacy && r.Method == http.MethodPost:
		case r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != upstream.MethodCallTool ||
			session != "" || !modernVersion(r.Header.Get("Mcp-Protocol-Version")):
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || len(body) > mcp.DefaultMaxRequestBodyBytes {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		var (
			c  *pipeline.Call
			id json.RawMessage
			ok bool
		)
		if legacy {
			if g.forward.Intercept(w, r, session, body) {
				return
			}
			c, id, ok = g.sessionPassable(next, r, body, session)
		} else {
			c, id, ok = g.passable(r, body)
		}
		if !ok {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		c.Wire = &pipeline.Wire{Body: body, Params: c.Wire.Params, Header: r.Header, Response: w}
		res, err := g.chain.Serve(r.Context(), c)
		if err == nil && res == nil {
			return // the response is written
		}
		var msg []byte
		if err != nil {
			msg = bridge.ErrorResponse(id, err)
		} else {
			result, merr := json.Marshal(res)
			if merr != nil {
				result = bridge.ErrorResponse(id, merr)
			}
			msg = []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(result) + `}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(msg)
	})
}

// sessionPassable decides whether a legacy client's request can take the
// passthrough path and, if so, returns its call and id: a tools/call of a
// tool whose upstream is a legacy one over streamable HTTP (package bridge
// forwards it on the gateway's session with the upstream), in a session the
// SDK server holds for this principal, without a progress token (the
// upstream's session is shared, and tokens must be unique in it) or keys
// that only a 2026-07-28 request carries. Everything else goes to the SDK.
func (g *Gateway) sessionPassable(next http.Handler, r *http.Request, body []byte, session string) (*pipeline.Call, json.RawMessage, bool) {
	if m, ok, _ := rawjson.GetString(body, "method"); !ok || m != upstream.MethodCallTool {
		return nil, nil, false
	}
	id, ok, _ := rawjson.Get(body, "id")
	if !ok || len(id) == 0 || id[0] == 'n' {
		return nil, nil, false
	}
	params, ok, _ := rawjson.Get(body, "params")
	if !ok {
		return nil, nil, false
	}
	// The gateway routes and resolves by the first member of a name, the
	// upstream may execute the last: the SDK handles such requests.
	if _, dup, err := rawjson.Duplicate(body); err != nil || dup {
		return nil, nil, false
	}
	if _, dup, err := rawjson.Duplicate(params); err != nil || dup {
		return nil, nil, false
	}
	name, ok, _ := rawjson.GetString(params, "name")
	if !ok {
		return nil, nil, false
	}
	for _, k := range []string{"requestState", "inputResponses"} {
		if _, has, _ := rawjson.Get(params, k); has {
			return nil, nil, false
		}
	}
	if meta, has, _ := rawjson.Get(params, "_meta"); has {
		if _, dup, err := rawjson.Duplicate(meta); err != nil || dup {
			return nil, nil, false
		}
		for _, k := range []string{"progressToken", mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel} {
			if _, has, _ := rawjson.Get(meta, k); has {
				return nil, nil, false
			}
		}
	}
	t, ok := g.View().Tool(name)
	if !ok || g.discloses(t.Upstream) {
		return nil, nil, false
	}
	if conn, ok := g.Upstream(t.Upstream); !ok {
		return nil, nil, false
	} else if _, ok := conn.SessionPassthrough(); !ok {
		return nil, nil, false
	}
	if g.mayAsk(t) {
		return nil, nil, false // asking a legacy client mid-call needs its SDK session
	}
	var principal string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		principal = ti.UserID
	}
	ss := g.checked.check(next, r, session, principal, g.server)
	if ss == nil {
		return nil, nil, false
	}
	args, _, _ := rawjson.Get(params, "arguments")
	if string(args) == "null" {
		args = nil
	}
	// No Session: the stages that would ask the client mid-call (ask,
	// approve) see a client they cannot ask and never send it a request
	// outside this call's stream; mayAsk keeps such calls off this path.
	client := &pipeline.Client{Version: r.Header.Get("Mcp-Protocol-Version"), Capabilities: ss.InitializeParams().Capabilities,
		Principal: principal}
	return &pipeline.Call{Method: upstream.MethodCallTool, Name: name, Arguments: args, Client: client,
		Wire: &pipeline.Wire{Params: params}}, id, true
}

// passable decides whether a request can take the passthrough path and,
// if so, returns its call and id.
func (g *Gateway) passable(r *http.Request, body []byte) (*pipeline.Call, json.RawMessage, bool) {
	if m, ok, _ := rawjson.GetString(body, "method"); !ok || m != upstream.MethodCallTool {
		return nil, nil, false
	}
	id, ok, _ := rawjson.Get(body, "id")
	if !ok || len(id) == 0 || id[0] == 'n' {
		return nil, nil, false
	}
	params, ok, _ := rawjson.Get(body, "params")
	if !ok {
		return nil, nil, false
	}
	name, ok, _ := rawjson.GetString(params, "name")
	if !ok || name != r.Header.Get("Mcp-Name") {
		return nil, nil, false // the SDK answers the mismatch
	}
	for _, k := range []string{"requestState", "inputResponses"} {
		if _, has, _ := rawjson.Get(params, k); has {
			return nil, nil, false
		}
	}
	t, ok := g.View().Tool(name)
	if !ok || g.discloses(t.Upstream) {
		return nil, nil, false // a disclosed tool's call is gated by the SDK path
	}
	if conn, ok := g.Upstream(t.Upstream); !ok || !conn.Passthrough() {
		return nil, nil, false
	}
	args, _, _ := rawjson.Get(params, "arguments")
	if string(args) == "null" {
		args = nil
	}
	client := &pipeline.Client{Version: r.Header.Get("Mcp-Protocol-Version"), Modern: true}
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		client.Principal = ti.UserID
	}
	return &pipeline.Call{Method: upstream.MethodCallTool, Name: name, Arguments: args, Client: client,
		Wire: &pipeline.Wire{Params: params}}, id, true
}

func modernVersion(v string) bool {
	return len(v) == len("2006-01-02") && v >= preflight.ProtocolStateless
}

// errReader always fails with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// mayAsk reports whether a call of t may need the client asked mid-call
// for a confirmation or an approval: when the gateway decides calls and
// the tool's declaration does not make it a plain read (a resolution stays
// within the declaration, but may add requiresConfirmation), or a decision
// rule confirms.
func (g *Gateway) mayAsk(t *catalog.Tool) bool {
	d := g.opts.Decisions
	if d == nil {
		return false
	}
	for _, r := range d.Rules {
		if r.Verdict == pipeline.Confirm {
			return true
		}
	}
	if t.Tool == nil {
		return true
	}
	a := preflight.AnnotationsOf(t.Tool.Annotations)
	if !a.ReadOnlyHint { // a read-only tool's destructiveHint means nothing
		return true
	}
	h, err := hints.Read(t.Tool.Meta)
	return err != nil || h.RequiresConfirmation != nil && *h.RequiresConfirmation || t.Resolvable
}
