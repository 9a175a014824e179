package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Directory is what the route stage looks names up in.
type Directory interface {
	// View is the current aggregated catalog.
	View() *catalog.View
	// Upstream returns the upstream of that name.
	Upstream(name string) (*upstream.Conn, bool)
}

// Route finds the upstream of the call's tool, prompt or resource and its
// name there. An unknown tool, prompt or resource is -32602, as the SDK
// answers them.
func Route(dir Directory) Stage {
	return Stage{Name: "route", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			v := dir.View()
			var up string
			switch c.Method {
			case upstream.MethodCallTool:
				t, ok := v.Tool(c.Name)
				if !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", clip(c.Name))}
				}
				c.Tool, c.Target, up = t, t.Name, t.Upstream
			case upstream.MethodGetPrompt:
				p, ok := v.Prompt(c.Name)
				if !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", clip(c.Name))}
				}
				c.Target, up = p.Name, p.Upstream
			case upstream.MethodReadResource:
				u, ok := v.ResourceUpstream(c.Name)
				if !ok {
					return nil, mcp.ResourceNotFoundError(clip(c.Name))
				}
				c.Target, up = c.Name, u
			default:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not routed", c.Method)}
			}
			conn, ok := dir.Upstream(up)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q is not configured", up)}
			}
			c.Upstream = conn
			return next.Serve(ctx, c)
		})
	}}
}

// clip bounds a client-supplied string quoted in an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Resolve works out what a tools/call will do with r before it is
// forwarded. A resolver that fails leaves the static annotations in place
// (logged): resolution informs the stages after it and never blocks a
// call by itself. Calls without a tool pass through.
func Resolve(r Resolver, logger *slog.Logger) Stage {
	return Stage{Name: "resolve", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			if c.Tool == nil || r == nil {
				return next.Serve(ctx, c)
			}
			var args map[string]any
			if len(c.Arguments) > 0 {
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: arguments must be a JSON object"}
				}
			}
			if args == nil {
				args = map[string]any{}
			}
			res, err := r.Resolve(ctx, &ResolveQuery{Tool: c.Tool, Arguments: args, RawArguments: c.Arguments,
				Principal: c.Client.Principal, Upstream: c.Upstream, ForCall: true})
			if err != nil {
				logger.WarnContext(ctx, "resolution failed; using the static annotations", "tool", c.Name, "error", err)
				res = Static(c.Tool)
			}
			c.Resolution = res
			return next.Serve(ctx, c)
		})
	}}
}

// Log writes one record per call when it ends: the upstream, the tool (or
// prompt, or resource), both eras, the latency and the outcome.
func Log(logger *slog.Logger) Stage {
	return Stage{Name: "log", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			start := time.Now()
			res, err := next.Serve(ctx, c)
			outcome := c.Outcome
			level := slog.LevelInfo
			attrs := make([]slog.Attr, 0, 12)
			attrs = append(attrs, slog.String("method", c.Method))
			if c.Upstream != nil {
				attrs = append(attrs, slog.String("server", c.Upstream.Name()))
			}
			attrs = append(attrs, slog.String(targetKey(c.Method), clip(c.Name)))
			if c.Target != "" && c.Target != c.Name {
				attrs = append(attrs, slog.String("upstreamName", clip(c.Target)))
			}
			attrs = append(attrs, slog.String("era", c.Client.Version))
			if c.UpstreamEra != "" {
				attrs = append(attrs, slog.String("upstreamEra", c.UpstreamEra))
			}
			attrs = append(attrs, slog.Float64("latencyMs", float64(time.Since(start).Microseconds())/1000))
			if err != nil {
				level = slog.LevelWarn
				if outcome == "" {
					outcome = "error"
				}
				var we *jsonrpc.Error
				if errors.As(err, &we) {
					attrs = append(attrs, slog.Int64("code", we.Code))
				}
				attrs = append(attrs, slog.String("error", upstream.Sanitize(clip(err.Error()))))
			}
			if outcome == "" {
				outcome = "ok"
			}
			attrs = append(attrs, slog.String("outcome", outcome))
			if r := c.Resolution; r != nil {
				attrs = append(attrs, slog.Group("resolution", "source", r.Source,
					"readOnly", r.Annotations.ReadOnlyHint, "destructive", r.Annotations.DestructiveHint))
			}
			attrs = logDecision(attrs, c)
			logger.LogAttrs(ctx, level, "call", attrs...)
			return res, err
		})
	}}
}

func targetKey(method string) string {
	switch method {
	case upstream.MethodGetPrompt:
		return "prompt"
	case upstream.MethodReadResource:
		return "uri"
	}
	return "tool"
}
