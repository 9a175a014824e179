package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/flow"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// FlowMode is how the flow stage treats calls to one upstream.
type FlowMode string

// The flow modes.
const (
	// FlowOn: a call that carries a value read from another upstream is
	// flagged; writing a value back to the upstream it came from is not
	// (default).
	FlowOn FlowMode = "on"
	// FlowOff: the upstream is a trusted destination; its calls are
	// never flagged.
	FlowOff FlowMode = "off"
	// FlowStrict: writing a value back to the upstream it came from is
	// flagged too.
	FlowStrict FlowMode = "strict"
)

// Flow finds the values a client was shown that its calls send on. Before
// a tools/call goes on it sets c.Flow when the arguments carry a value
// read from another upstream in the same scope (principal and legacy
// session), or from any upstream when the call's effect is external; the
// decide stage after it confirms or denies such a call. After a tools/call,
// resources/read or prompts/get comes back, it records the result's values
// (package flow) as the upstream sent them (c.Unredacted), redacted ones
// included, at the sensitivity redact found: it sits outside redact.
type Flow struct {
	Tracker *flow.Tracker
	// Servers are the upstreams' modes; one not named is FlowOn.
	Servers map[string]FlowMode
	// Logger receives the flows found (sources, never values) and the
	// store's failures. Nil discards.
	Logger *slog.Logger
}

// Name implements call.Stage.
func (*Flow) Name() string { return "flow" }

// Methods implements call.Scoped.
func (*Flow) Methods() []string {
	return []string{call.ToolsCall, call.ResourcesRead, call.PromptsGet}
}

// Serve implements call.Stage.
func (s *Flow) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Upstream == nil {
		return next.Serve(ctx, c)
	}
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	scope := flow.Scope(principalOf(c), sessionOf(c))
	n, err := s.Tracker.Tick(ctx, scope)
	if err != nil {
		logger.WarnContext(ctx, "flows: counting the call", "err", err)
	}
	if c.Method == call.ToolsCall && c.Tool != nil {
		c.Flow = s.check(ctx, c, scope, n, logger)
	}
	res, err := next.Serve(ctx, c)
	if err != nil || res == nil || call.IsInputRequired(res) {
		return res, err
	}
	from := text.Clip(c.Name, quoteLimit) // a resource's URI is the client's
	if c.Tool != nil {
		from = c.Tool.Exposed
	}
	level := ResultSensitivity(c)
	if c.Redaction != nil && c.Redaction.Sensitivity.Rank() > level.Rank() {
		level = c.Redaction.Sensitivity
	}
	seen := res
	if c.Unredacted != nil {
		seen = c.Unredacted
	}
	if err := s.Tracker.Record(ctx, scope, state.FlowSource{Upstream: c.Upstream.Name(), Tool: from, Call: n}, seen, level); err != nil {
		logger.WarnContext(ctx, "flows: recording a result", "from", text.Clip(from, quoteLimit), "err", err)
	}
	return res, nil
}

// check returns the flow c's arguments carry, nil for none.
func (s *Flow) check(ctx context.Context, c *call.Call, scope string, n int64, logger *slog.Logger) *call.Flow {
	dest := c.Tool.Upstream
	mode := s.Servers[dest]
	if mode == FlowOff {
		return nil
	}
	args, err := c.Args()
	if err != nil {
		return nil // decide and the upstream refuse them
	}
	external := effective(c).Effect.Value == hints.EffectExternal
	skip := dest // written back where it came from
	if mode == FlowStrict || external {
		skip = ""
	}
	src, found, err := s.Tracker.Check(ctx, scope, args, skip)
	if errors.Is(err, flow.ErrTooMany) {
		return &call.Flow{Reason: "the arguments hold more strings than the gateway checks for values read by other calls"}
	}
	if err != nil {
		logger.WarnContext(ctx, "flows: looking up the arguments", "tool", c.Tool.Exposed, "err", err)
		if !flow.CarriesTokens(args) {
			return nil // nothing in them could be a value read elsewhere: paths, words, short values
		}
		return &call.Flow{Reason: fmt.Sprintf("the gateway could not check whether the arguments send on values read by other calls (%v)", err)}
	}
	if !found {
		return nil
	}
	f := &call.Flow{From: src.Tool, Upstream: src.Upstream, CallsAgo: max(n-src.Call, 0)}
	f.Reason = fmt.Sprintf("the call sends a value read from %s %s to %s", src.Tool, ago(f.CallsAgo), c.Tool.Exposed)
	if external {
		f.Reason += ", which acts outside this system"
	}
	logger.InfoContext(ctx, "flow found", "from", src.Tool, "to", c.Tool.Exposed, "callsAgo", f.CallsAgo)
	return f
}

func ago(n int64) string {
	switch n {
	case 0:
		return "in this call"
	case 1:
		return "1 call ago"
	}
	return fmt.Sprintf("%d calls ago", n)
}

func principalOf(c *call.Call) string {
	if c.Client == nil {
		return ""
	}
	return c.Client.Principal
}

func sessionOf(c *call.Call) string {
	if c.Client == nil {
		return ""
	}
	return c.Client.SessionID
}
