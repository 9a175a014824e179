package stage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/metrics"
)

// Metrics records every call in M when it ends: its upstream, method,
// tool, effect, decision, outcome and latency, and its confirmation. It
// reads the Call as the stages after it left it, so it sits outermost but
// for log. Label values are bounded: the tool is the catalog's name for it
// ("unknown" for a name the catalog does not have; prompts and resources
// have none), the server the configured upstream ("unknown" when the call
// was not routed).
type Metrics struct {
	M *metrics.Metrics
}

// Name implements call.Stage.
func (*Metrics) Name() string { return "metrics" }

// Serve implements call.Stage.
func (s *Metrics) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	start := time.Now()
	res, err := next.Serve(ctx, c)
	m := s.M
	rec := metrics.Call{Server: "unknown", Method: c.Method, Decision: "none", Outcome: c.Outcome,
		Seconds: time.Since(start).Seconds()}
	if c.Upstream != nil {
		rec.Server = c.Upstream.Name()
	}
	if c.Method == call.ToolsCall {
		rec.Tool, rec.Effect = "unknown", "unknown"
		if c.Tool != nil {
			rec.Tool = c.Tool.Exposed
		}
		if r := c.Resolution; r != nil {
			rec.Effect = string(r.Effective().Effect.Value)
		}
	} else {
		rec.Effect = "none"
	}
	if d := c.Decision; d != nil {
		rec.Decision = string(d.Verdict)
	}
	if rec.Outcome == "" {
		rec.Outcome = "ok"
		if err != nil {
			rec.Outcome = "error"
		}
	}
	m.Call(rec)
	confirmations(m, rec.Server, c)
	m.NotificationsDropped(rec.Server, c.NotificationsDropped)
	if c.Flow != nil && c.Decision != nil {
		action := string(c.Decision.Verdict)
		if c.Decision.DryRun {
			action = "dry-run"
		}
		m.Flow(rec.Server, action)
	}
	if r := c.Redaction; r != nil {
		for kind, n := range r.Kinds {
			m.Redacted(rec.Server, kind, n)
		}
	}
	return res, err
}

// confirmations records a call's confirmation events: asked when the
// gateway put the question in this request (a call that needed a
// confirmation and did not come with one: an in-band question asked within
// the call, or an input_required or out-of-band pointer sent back), then
// how it was answered.
func confirmations(m *metrics.Metrics, server string, c *call.Call) {
	d := c.Decision
	if d == nil || d.Verdict != call.Confirm || d.DryRun {
		return
	}
	answering := c.RequestState != "" || len(c.InputResponses) > 0
	conf := c.Confirmation
	if !answering && (conf == nil || conf.By == "client") {
		m.Confirmation(server, "asked", "")
	}
	switch {
	case conf != nil:
		m.Confirmation(server, "approved", conf.By)
	case c.Outcome == "declined", c.Outcome == "cancelled", c.Outcome == "timeout":
		m.Confirmation(server, c.Outcome, "")
	}
}
