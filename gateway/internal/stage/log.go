package stage

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Log writes one record per call when it ends: the method, the upstream,
// the tool (or prompt, or resource), both eras, the latency, the outcome,
// the resolution and the decision.
type Log struct {
	Logger *slog.Logger
}

// Name implements call.Stage.
func (*Log) Name() string { return "log" }

// Serve implements call.Stage.
func (l *Log) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	start := time.Now()
	res, err := next.Serve(ctx, c)
	level := slog.LevelInfo
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("method", c.Method))
	if c.Upstream != nil {
		attrs = append(attrs, slog.String("server", c.Upstream.Name()))
	}
	attrs = append(attrs, slog.String(targetKey(c.Method), text.Clip(c.Name, quoteLimit)))
	if c.Target != "" && c.Target != c.Name {
		attrs = append(attrs, slog.String("upstreamName", text.Clip(c.Target, quoteLimit)))
	}
	if c.SignedInAs != "" {
		attrs = append(attrs, slog.String("signedInAs", text.Clip(c.SignedInAs, quoteLimit)))
	}
	attrs = append(attrs, slog.String("era", c.Client.Version))
	if c.UpstreamEra != "" {
		attrs = append(attrs, slog.String("upstreamEra", c.UpstreamEra))
	}
	attrs = append(attrs, slog.Float64("latencyMs", float64(time.Since(start).Microseconds())/1000))
	if err != nil {
		level = slog.LevelWarn
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			attrs = append(attrs, slog.Int64("code", we.Code))
		}
		attrs = append(attrs, slog.String("error", text.Sanitize(text.Clip(err.Error(), quoteLimit))))
	}
	attrs = append(attrs, slog.String("outcome", c.Ended(err)))
	if n := c.NotificationsDropped; n > 0 {
		level = max(level, slog.LevelWarn)
		attrs = append(attrs, slog.Int("notificationsDropped", n))
	}
	if r := c.Resolution; r != nil {
		attrs = append(attrs, slog.GroupAttrs("resolution", slog.String("source", r.Source),
			slog.Bool("readOnly", r.Annotations.ReadOnlyHint), slog.Bool("destructive", r.Annotations.DestructiveHint)))
	}
	attrs = logDecision(attrs, c)
	l.Logger.LogAttrs(ctx, level, "call", attrs...)
	return res, err
}

// logDecision adds the call's decision to a log record.
func logDecision(attrs []slog.Attr, c *call.Call) []slog.Attr {
	d := c.Decision
	if d == nil {
		return attrs
	}
	g := make([]slog.Attr, 0, 6)
	g = append(g, slog.String("verdict", string(d.Verdict)), slog.String("reason", d.Reason))
	if d.Rule != "" {
		g = append(g, slog.String("rule", d.Rule))
	}
	if d.DryRun {
		g = append(g, slog.Bool("dryRun", true))
	}
	if d.OutOfBand {
		g = append(g, slog.Bool("outOfBand", true))
	}
	if cf := c.Confirmation; cf != nil {
		g = append(g, slog.String("confirmedBy", cf.By))
	}
	return append(attrs, slog.GroupAttrs("decision", g...))
}

func targetKey(method string) string {
	switch method {
	case call.PromptsGet:
		return "prompt"
	case call.ResourcesRead, call.Subscribe, call.Unsubscribe:
		return "uri"
	case call.Complete:
		return "ref"
	case call.Answer:
		return "question"
	}
	return "tool"
}
