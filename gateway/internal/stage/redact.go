package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// Redact removes secrets and personal data from what an upstream sends a
// client (tools/call, resources/read and prompts/get results, JSON-RPC
// errors, and the progress and log notifications of a call) by their
// sensitivity, with Redactor (package redact): the effective
// mcp.dev/resultSensitivity of the call (c.Resolution), raised by a
// trust-annotations "sensitive" label on the result. It changes the result
// the forwarder returns, on every path, before any stage above it or the
// client sees it, and records what it removed in c.Redaction (kinds and
// counts, never values). A result that passes untouched keeps its bytes;
// questions (input_required) pass as they are.
type Redact struct {
	Redactor *redact.Redactor
	// Logger receives redactions and withheld results (kinds and counts,
	// never values). Nil discards.
	Logger *slog.Logger
}

// Name implements call.Stage.
func (*Redact) Name() string { return "redact" }

// Methods implements call.Scoped.
func (*Redact) Methods() []string {
	return []string{call.ToolsCall, call.ResourcesRead, call.PromptsGet}
}

// Serve implements call.Stage.
func (s *Redact) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	level := ResultSensitivity(c)
	if c.Client != nil {
		// The call's notifications cross the stage on their way out.
		client := *c.Client
		client.Conn = &redactConn{Conn: c.Client.Conn, r: s.Redactor, s: level, c: c, logger: logger}
		orig := c.Client
		c.Client = &client
		defer func() { c.Client = orig }()
	}
	res, err := next.Serve(ctx, c)
	c.Unredacted = res
	if err != nil {
		rep, out := redactError(s.Redactor, level, err)
		note(ctx, c, rep, logger)
		return nil, out
	}
	if res == nil {
		return res, nil
	}
	if c.Method == call.ToolsCall {
		out, _ := redactBody(ctx, s.Redactor, c, level, res, logger)
		return out, nil
	}
	if call.IsInputRequired(res) || s.Redactor.Passes(level, res) {
		return res, nil
	}
	redactOther := redactRead
	if c.Method == call.PromptsGet {
		redactOther = redactPrompt
	}
	out, rep, ok := redactOther(s.Redactor, level, res)
	note(ctx, c, rep, logger)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The result of this request was withheld by the gateway's policy: " + rep.Reason + "."}
	}
	return out, nil
}

// ResultSensitivity is the effective mcp.dev/resultSensitivity of c: the
// resolution's, else the tool's static hint; "" when neither says.
func ResultSensitivity(c *call.Call) hints.Sensitivity {
	if c.Resolution != nil {
		return c.Resolution.Hints.ResultSensitivity
	}
	if c.Tool != nil {
		return Static(c.Tool).Hints.ResultSensitivity
	}
	return ""
}

// redactBody returns the JSON result body as the client may see it, and
// whether it changed. A body that passes untouched is returned as it is,
// without being decoded; a redacted one keeps every member but content,
// structuredContent and isError byte for byte. A body that cannot be read
// when it must be redacted is withheld.
func redactBody(ctx context.Context, r *redact.Redactor, c *call.Call, s hints.Sensitivity, body json.RawMessage, logger *slog.Logger) (json.RawMessage, bool) {
	if call.IsInputRequired(body) {
		return body, false
	}
	if r.Passes(s, body) {
		return body, false
	}
	var res mcp.CallToolResult
	var enc json.RawMessage
	if err := json.Unmarshal(body, &res); err != nil {
		note(ctx, c, redact.Report{Level: s, Withheld: true, Reason: "the result could not be read"}, logger)
		enc = mustMarshal(withheldResult())
	} else {
		out, rep := r.Result(&res, s)
		note(ctx, c, rep, logger)
		if out == &res {
			return body, false
		}
		if enc, err = json.Marshal(out); err != nil {
			enc = mustMarshal(withheldResult())
		}
	}
	merged, ok := mergeResult(body, enc)
	if !ok {
		return enc, true
	}
	return merged, true
}

// mergeResult returns body with the members a redaction rewrites taken
// from enc: content, structuredContent and _meta (removed when enc has
// none) and isError.
func mergeResult(body, enc json.RawMessage) (json.RawMessage, bool) {
	return mergeKeys(body, enc, []string{"content", "structuredContent", "isError", "_meta"})
}

// mergeKeys returns body with the members keys taken from enc, or removed
// when enc has none.
func mergeKeys(body, enc json.RawMessage, keys []string) (json.RawMessage, bool) {
	out := body
	var err error
	for _, k := range keys {
		v, has, _ := rawjson.Get(enc, k)
		if has {
			out, err = rawjson.Set(out, k, v)
		} else {
			out, err = rawjson.Delete(out, k)
		}
		if err != nil {
			return nil, false
		}
	}
	return out, true
}

// note records in c what a redaction did, and logs it.
func note(ctx context.Context, c *call.Call, rep redact.Report, logger *slog.Logger) {
	if !rep.Withheld && !rep.Redacted() {
		return
	}
	c.Redaction = &call.Redaction{Sensitivity: rep.Level, Withheld: rep.Withheld, Kinds: rep.Kinds}
	attrs := []any{"tool", text.Clip(c.Name, quoteLimit), "sensitivity", string(rep.Level)}
	if rep.Withheld {
		logger.InfoContext(ctx, "result withheld", append(attrs, "reason", rep.Reason)...)
		return
	}
	logger.InfoContext(ctx, "result redacted", append(attrs, "kinds", rep.Kinds)...)
}

func withheldResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: "The result of this call was withheld by the gateway's policy: it could not be read to be redacted."}}}
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{"content":[],"isError":true}`)
	}
	return bytes.TrimSpace(b)
}
