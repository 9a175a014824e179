package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// RedactOptions configure [Redact]; nil means the defaults.
type RedactOptions struct {
	// Raw wraps a result's JSON for the stages above and the SDK, when
	// forward returned its result as bytes (a value with a Body method,
	// such as bridge.Raw). Nil means the redacted result is returned
	// decoded, as an *mcp.CallToolResult.
	Raw func(body json.RawMessage) mcp.Result
	// Logger receives redactions and withheld results (kinds and counts,
	// never values). Nil discards.
	Logger *slog.Logger
}

// Redact removes secrets and personal data from tools/call results by
// their sensitivity, with r (package redact): the effective
// mcp.dev/resultSensitivity of the call (c.Resolution), raised by a
// trust-annotations "sensitive" label on the result. It records what it
// removed in c.Redaction (kinds and counts, never values).
//
// On the passthrough path (c.Wire) the final handler writes the result
// itself; Redact gives it c.Wire.Result, which leaves a result that
// passes untouched as it is, bytes and all, and redacts the others, so
// that a sensitive result never reaches the client on either path.
// Questions (input_required) pass as they are.
func Redact(r *redact.Redactor, o *RedactOptions) Stage {
	var opts RedactOptions
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return Stage{Name: "redact", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			if c.Method != upstream.MethodCallTool {
				return next.Serve(ctx, c)
			}
			s := ResultSensitivity(c)
			if c.Wire != nil {
				c.Wire.Result = func(body json.RawMessage) json.RawMessage {
					out, _ := redactBody(ctx, r, c, s, body, opts.Logger)
					return out
				}
				return next.Serve(ctx, c)
			}
			res, err := next.Serve(ctx, c)
			if err != nil || res == nil {
				return res, err
			}
			switch v := res.(type) {
			case *mcp.CallToolResult:
				if v.NeedsInput() || len(v.InputRequests) > 0 {
					return res, nil
				}
				out, rep := r.Result(v, s)
				note(ctx, c, rep, opts.Logger)
				return out, nil
			case interface{ Body() json.RawMessage }:
				body, changed := redactBody(ctx, r, c, s, v.Body(), opts.Logger)
				if !changed {
					return res, nil
				}
				if opts.Raw != nil {
					return opts.Raw(body), nil
				}
				var t mcp.CallToolResult
				if err := json.Unmarshal(body, &t); err != nil {
					return withheldResult(), nil
				}
				return &t, nil
			}
			return res, nil
		})
	}}
}

// ResultSensitivity is the effective mcp.dev/resultSensitivity of c: the
// resolution's, else the tool's static hint; "" when neither says.
func ResultSensitivity(c *Call) hints.Sensitivity {
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
func redactBody(ctx context.Context, r *redact.Redactor, c *Call, s hints.Sensitivity, body json.RawMessage, logger *slog.Logger) (json.RawMessage, bool) {
	if rt, _, _ := rawjson.GetString(body, "resultType"); rt == "input_required" {
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
// from enc: content, structuredContent (removed when enc has none) and
// isError.
func mergeResult(body, enc json.RawMessage) (json.RawMessage, bool) {
	out := body
	var err error
	for _, k := range []string{"content", "structuredContent", "isError"} {
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
func note(ctx context.Context, c *Call, rep redact.Report, logger *slog.Logger) {
	if !rep.Withheld && !rep.Redacted() {
		return
	}
	c.Redaction = &Redaction{Sensitivity: rep.Level, Withheld: rep.Withheld, Kinds: rep.Kinds}
	attrs := []any{"tool", clip(c.Name), "sensitivity", string(rep.Level)}
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
