package stage

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// What the redact stage covers beyond a tools/call result: the results of
// resources/read and prompts/get, an upstream's JSON-RPC errors, and the
// notifications relayed to the client while a call runs. Each is read as
// a tool result holding the same text, so that one redactor, at one
// sensitivity, judges them all.

// redactRead redacts a resources/read result: its contents (text, blobs
// of a text type, URIs, _meta) and _meta.
func redactRead(r *redact.Redactor, s hints.Sensitivity, body json.RawMessage) (json.RawMessage, redact.Report, bool) {
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, unreadable(s), false
	}
	tr := &mcp.CallToolResult{Meta: res.Meta}
	for _, c := range res.Contents {
		tr.Content = append(tr.Content, &mcp.EmbeddedResource{Resource: c})
	}
	out, rep := r.Result(tr, s)
	if rep.Withheld || out == tr {
		return body, rep, !rep.Withheld
	}
	res.Meta, res.Contents = out.Meta, nil
	for _, c := range out.Content {
		e, ok := c.(*mcp.EmbeddedResource)
		if !ok {
			return nil, unreadable(s), false
		}
		res.Contents = append(res.Contents, e.Resource)
	}
	return remarshal(body, &res, rep)
}

// redactPrompt redacts a prompts/get result: its description, its
// messages' content blocks and _meta.
func redactPrompt(r *redact.Redactor, s hints.Sensitivity, body json.RawMessage) (json.RawMessage, redact.Report, bool) {
	var res mcp.GetPromptResult
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, unreadable(s), false
	}
	tr := &mcp.CallToolResult{Meta: res.Meta}
	if res.Description != "" {
		tr.StructuredContent = map[string]any{"description": res.Description}
	}
	for _, m := range res.Messages {
		tr.Content = append(tr.Content, m.Content)
	}
	out, rep := r.Result(tr, s)
	if rep.Withheld || out == tr {
		return body, rep, !rep.Withheld
	}
	res.Meta = out.Meta
	if d, ok := out.StructuredContent.(map[string]any); ok {
		res.Description, _ = d["description"].(string)
	}
	if len(out.Content) != len(res.Messages) {
		return nil, unreadable(s), false
	}
	for i, m := range res.Messages {
		mm := *m
		mm.Content = out.Content[i]
		res.Messages[i] = &mm
	}
	return remarshal(body, &res, rep)
}

// remarshal encodes v, a redacted result, into body: the members v has
// replace body's, _meta is removed when v has none, and the members v
// does not know (resultType, those of later versions) are kept.
func remarshal(body json.RawMessage, v any, rep redact.Report) (json.RawMessage, redact.Report, bool) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, unreadable(rep.Level), false
	}
	ms, err := rawjson.Members(enc)
	if err != nil {
		return nil, unreadable(rep.Level), false
	}
	keys := []string{"_meta"}
	for _, m := range ms {
		if m.Key != "_meta" {
			keys = append(keys, m.Key)
		}
	}
	if merged, ok := mergeKeys(body, enc, keys); ok {
		return merged, rep, true
	}
	return enc, rep, true
}

// redactError redacts the message and data of an upstream's JSON-RPC
// error; err itself when nothing changes.
func redactError(r *redact.Redactor, s hints.Sensitivity, err error) (redact.Report, error) {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return redact.Report{}, err
	}
	tr := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: je.Message}}}
	if len(je.Data) > 0 {
		tr.StructuredContent = je.Data
	}
	if r.Passes(s, je.Data) {
		return redact.Report{}, err
	}
	out, rep := r.Result(tr, s)
	if rep.Withheld {
		return rep, &jsonrpc.Error{Code: je.Code, Message: "The upstream's error was withheld by the gateway's policy: " + rep.Reason + "."}
	}
	if out == tr {
		return rep, err
	}
	ne := &jsonrpc.Error{Code: je.Code, Message: je.Message}
	if t, ok := out.Content[0].(*mcp.TextContent); ok {
		ne.Message = t.Text
	}
	if out.StructuredContent != nil {
		if b, err := json.Marshal(out.StructuredContent); err == nil {
			ne.Data = b
		} else {
			ne.Data = nil
		}
	}
	return rep, ne
}

// redactConn redacts the notifications of a call (progress, log messages)
// before they reach the client: a notification that must be withheld is
// dropped.
type redactConn struct {
	call.Conn
	r      *redact.Redactor
	s      hints.Sensitivity
	c      *call.Call
	logger *slog.Logger
}

// Notify implements call.Conn.
func (rc *redactConn) Notify(ctx context.Context, method string, params json.RawMessage) {
	if len(params) == 0 || rc.r.Passes(rc.s, params) {
		rc.Conn.Notify(ctx, method, params)
		return
	}
	tr := &mcp.CallToolResult{StructuredContent: params}
	out, rep := rc.r.Result(tr, rc.s)
	if rep.Withheld {
		rc.logger.InfoContext(ctx, "notification withheld", "tool", text.Clip(rc.c.Name, quoteLimit), "method", method, "reason", rep.Reason)
		return
	}
	if out == tr {
		rc.Conn.Notify(ctx, method, params)
		return
	}
	b, err := json.Marshal(out.StructuredContent)
	if err != nil {
		return
	}
	rc.logger.InfoContext(ctx, "notification redacted", "tool", text.Clip(rc.c.Name, quoteLimit), "method", method, "kinds", rep.Kinds)
	rc.Conn.Notify(ctx, method, b)
}

func unreadable(s hints.Sensitivity) redact.Report {
	return redact.Report{Level: s, Withheld: true, Reason: "the result could not be read"}
}
