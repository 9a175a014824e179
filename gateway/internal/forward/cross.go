package forward

//lint:file-ignore SA1019 a legacy client's calls carry the most verbose log level to a 2026-07-28 upstream, as on the decoded path; protocol 2026-07-28 deprecates logging (SEP-2577) but 2025-11-25 clients still use it.

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// crossPassable reports a call the cross passthrough sends: a legacy
// client's first tools/call of a tool whose upstream speaks 2026-07-28
// over streamable HTTP, with no _meta the decoded path rewrites.
func crossPassable(c *call.Call) bool {
	return c.Method == call.ToolsCall && !c.Client.Modern() && c.RequestState == "" &&
		len(c.InputResponses) == 0 && !mapsMeta(c) && c.Upstream.Passthrough()
}

// crossPassthrough sends a legacy client's tools/call to a 2026-07-28
// upstream over HTTP, re-encoded from what was judged with the _meta the
// decoded path sends (crossMeta), without the SDK's types. The result
// passes as the upstream sent it; an input_required one continues on the
// decoded path, which asks the client within the call and resumes the
// upstream's call with the answers.
func (f *Forward) crossPassthrough(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	era := c.Upstream.Era()
	meta, ok := crossMeta(c, era)
	if !ok {
		return f.legacy(ctx, c, nil)
	}
	p := params(ctx, c)
	p.Meta = meta
	body := wire.Request(json.RawMessage("1"), c.Method, p)
	h := headers(c)
	h.Set("Mcp-Protocol-Version", era)
	msg, err := f.roundTrip(ctx, c, body, h)
	if err != nil {
		return nil, err
	}
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
	if !call.IsInputRequired(res) {
		if call.IsToolError(res) {
			c.Outcome = "tool_error"
		}
		return res, nil
	}
	var typed mcp.CallToolResult
	if err := json.Unmarshal(res, &typed); err != nil {
		return nil, internalError("upstream %q sent a malformed input_required result", c.Upstream.Name())
	}
	step, ok := upstream.InputStep(&upstream.Result{Raw: res, Typed: &typed})
	if !ok {
		// Never post the call again: it was sent once already.
		return nil, internalError("upstream %q sent a malformed input_required result", c.Upstream.Name())
	}
	return f.legacy(ctx, c, step)
}

// crossMeta returns the _meta the decoded path sends a 2026-07-28
// upstream (era) for a legacy client: the client's own, with its
// session's capabilities, the most verbose log level (the session's level
// filters what reaches the client), the upstream's protocol version and
// the gateway's clientInfo. It reports false when they cannot be encoded.
func crossMeta(c *call.Call, era string) (json.RawMessage, bool) {
	caps := capabilitiesMeta(c.Client.Capabilities)
	if caps == nil {
		return nil, false
	}
	rawCaps, err := json.Marshal(caps)
	if err != nil {
		return nil, false
	}
	info, err := json.Marshal(c.Upstream.ClientInfo())
	if err != nil {
		return nil, false
	}
	m := json.RawMessage("{}")
	if len(c.Meta) > 0 {
		m = c.Meta
	}
	for _, kv := range []struct {
		key string
		val []byte
	}{
		{mcp.MetaKeyClientCapabilities, rawCaps},
		{mcp.MetaKeyLogLevel, []byte(`"debug"`)},
		{mcp.MetaKeyProtocolVersion, wire.AppendString(nil, era)},
		{mcp.MetaKeyClientInfo, info},
	} {
		if m, err = rawjson.Set(m, kv.key, kv.val); err != nil {
			return nil, false
		}
	}
	return m, true
}
