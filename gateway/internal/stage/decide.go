package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// Mode says whether decisions are enforced.
type Mode string

// The modes.
const (
	// Enforce: calls are confirmed and denied as decided (default).
	Enforce Mode = "enforce"
	// DryRun: decisions are recorded and logged, never enforced.
	DryRun Mode = "dry-run"
)

// DecisionRule is a deployer's decision for the calls it matches.
type DecisionRule struct {
	// Name identifies the rule in decisions, logs and errors.
	Name string
	// Servers are the gateway's names of the upstreams the rule applies
	// to; empty means every upstream.
	Servers []string
	// Tools are path.Match globs over the upstream's tool names; empty
	// means every tool.
	Tools []string
	// When is a CEL expression over server, tool, args, effect,
	// principal and flow ([rules.Condition]); empty means always.
	When string
	// Verdict is the decision of a matching call.
	Verdict call.Verdict
	// OutOfBand, with call.Confirm, demands a person's approval out of band.
	OutOfBand bool
	// Reason is told to the client; empty means one naming the rule.
	Reason string
}

// DecideOptions configure [NewDecider]. The zero value decides by the
// hints alone, enforced.
type DecideOptions struct {
	// Rules are tried in order; the first that matches decides. A call
	// no rule matches gets the defaults: read and write allowed, delete,
	// destructive and requiresConfirmation confirmed.
	Rules []DecisionRule
	// Mode is the gateway's; Servers override it per upstream. Empty
	// means Enforce.
	Mode    Mode
	Servers map[string]Mode
	// CostLimit bounds one rule's evaluation (CEL cost units). Zero means
	// rules.DefaultCostLimit.
	CostLimit uint64
	// MaxArgumentBytes bounds the arguments rules read. Zero means
	// rules.DefaultMaxArgumentBytes.
	MaxArgumentBytes int
	// Flow is what a call gets whose arguments carry a value read by
	// another call (the flow stage's c.Flow): call.Confirm (the zero
	// value) or call.Deny. A call a rule allowed or confirmed gets it too,
	// unless the rule reads flow: such a rule decides flows itself.
	Flow call.Verdict
}

// Decider makes the decision of each call. It is safe for concurrent use.
type Decider struct {
	flow     call.Verdict
	rules    []decisionRule
	mode     Mode
	servers  map[string]Mode
	maxArgs  int
	readArgs bool
}

type decisionRule struct {
	DecisionRule
	servers map[string]bool
	cond    *rules.Condition
}

// NewDecider checks and compiles o. An error names the rule and what is
// wrong with it.
func NewDecider(o *DecideOptions) (*Decider, error) {
	if o == nil {
		o = &DecideOptions{}
	}
	d := &Decider{mode: o.Mode, servers: o.Servers, maxArgs: o.MaxArgumentBytes, flow: o.Flow}
	if d.mode == "" {
		d.mode = Enforce
	}
	if d.flow == "" {
		d.flow = call.Confirm
	}
	var errs []error
	if d.flow != call.Confirm && d.flow != call.Deny {
		errs = append(errs, fmt.Errorf("flow: %q: allowed: confirm, deny", o.Flow))
	}
	check := func(m Mode, where string) {
		if m != Enforce && m != DryRun {
			errs = append(errs, fmt.Errorf("%s: %q is not a mode (allowed: enforce, dry-run)", where, m))
		}
	}
	check(d.mode, "mode")
	for s, m := range o.Servers {
		check(m, "servers."+s)
	}
	names := map[string]bool{}
	for i, r := range o.Rules {
		at := fmt.Sprintf("rules[%d] (%q)", i, r.Name)
		switch {
		case r.Name == "":
			errs = append(errs, fmt.Errorf("rules[%d]: a name is required", i))
		case names[r.Name]:
			errs = append(errs, fmt.Errorf("%s: the name is used twice", at))
		}
		names[r.Name] = true
		switch r.Verdict {
		case call.Allow, call.Deny:
			if r.OutOfBand {
				errs = append(errs, fmt.Errorf("%s: out-of-band approval goes with the decision confirm, not %s", at, r.Verdict))
			}
		case call.Confirm:
		default:
			errs = append(errs, fmt.Errorf("%s: decision %q: allowed: allow, confirm, deny", at, r.Verdict))
		}
		for _, t := range r.Tools {
			if _, err := path.Match(t, ""); err != nil || t == "" {
				errs = append(errs, fmt.Errorf("%s: %q is not a glob pattern", at, t))
			}
		}
		dr := decisionRule{DecisionRule: r}
		if len(r.Servers) > 0 {
			dr.servers = make(map[string]bool, len(r.Servers))
			for _, s := range r.Servers {
				dr.servers[s] = true
			}
		}
		if r.When != "" {
			cond, err := rules.CompileCondition(r.When, o.CostLimit)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: when: %w", at, err))
			} else {
				dr.cond = cond
				d.readArgs = d.readArgs || cond.ReadsArgs()
			}
		}
		if dr.Reason == "" {
			dr.Reason = fmt.Sprintf("the deployer's rule %q", r.Name)
		}
		d.rules = append(d.rules, dr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// Decide is the decide stage: it sets c.Decision on every tools/call. It
// needs the resolve stage before it.
type Decide struct {
	Decider *Decider
}

// Name implements call.Stage.
func (*Decide) Name() string { return "decide" }

// Methods implements call.Scoped.
func (*Decide) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (s *Decide) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Tool != nil {
		c.Decision = s.Decider.Decide(c)
	}
	return next.Serve(ctx, c)
}

// Reasons of the default decisions.
const (
	reasonRead     = "the call only reads"
	reasonWrite    = "the call changes data but does not delete or destroy it"
	reasonExternal = "the call acts outside this system but does not delete or destroy anything"
)

// Decide returns the decision on c, a routed and resolved tools/call.
func (d *Decider) Decide(c *call.Call) *call.Decision {
	eff := effective(c)
	server := c.Tool.Upstream
	out := &call.Decision{DryRun: d.modeOf(server) == DryRun}
	if len(d.rules) > 0 {
		if d.match(c, server, eff.Effect.Value, out) {
			return out
		}
	}
	defaults(eff, out)
	d.applyFlow(c.Flow, out)
	return out
}

// applyFlow makes out at least as strict as the flow action when the call
// carries a value read elsewhere.
func (d *Decider) applyFlow(f *call.Flow, out *call.Decision) {
	if f == nil || out.Verdict == call.Deny {
		return
	}
	switch {
	case d.flow == call.Deny:
		out.Verdict, out.Reason, out.Rule = call.Deny, f.Reason, "flow"
	case out.Verdict == call.Allow:
		out.Verdict, out.Reason, out.Rule = call.Confirm, f.Reason, "flow"
	default: // confirmed already: say both
		out.Reason = f.Reason + "; and " + out.Reason
	}
}

// effective is package policy's reading of a routed tools/call: its
// resolution, else the tool's declaration.
func effective(c *call.Call) policy.Effective {
	r := c.Resolution
	if r == nil {
		r = Static(c.Tool)
	}
	if r.Source == "static" && c.Tool.Tool != nil {
		return policy.Evaluate(policy.Input{Static: c.Tool.Tool.Annotations, StaticHints: r.Hints})
	}
	ann := r.Annotations
	return policy.Evaluate(policy.Input{Resolved: &ann, ResolvedHints: r.Hints})
}

// StaticConfirms reports whether the gateway asks before every call of t,
// knowing nothing more of it than its declaration: the first deployer's
// rule for t says confirm, unconditionally, or no rule is for t and the
// defaults confirm it (delete, destructive or requiresConfirmation);
// enforced, not in a dry run. A rule with a condition decides call by
// call, so the listing claims nothing of a tool it may match. The
// gateway's listing says so in the tool's mcp.dev/requiresConfirmation, so
// that a client or a lint reading the listing sees what the gateway does.
func (d *Decider) StaticConfirms(t *catalog.Tool) bool {
	if t == nil || t.Tool == nil || d.modeOf(t.Upstream) == DryRun {
		return false
	}
	for i := range d.rules {
		r := &d.rules[i]
		if r.servers != nil && !r.servers[t.Upstream] || len(r.Tools) > 0 && !matchAny(r.Tools, t.Name) {
			continue
		}
		// The first rule that may match decides; one with a condition
		// decides call by call, so the listing claims nothing.
		return r.cond == nil && r.Verdict == call.Confirm
	}
	var out call.Decision
	defaults(policy.Evaluate(policy.Input{Static: t.Tool.Annotations, StaticHints: Static(t).Hints}), &out)
	return out.Verdict == call.Confirm
}

// defaults sets out's verdict and reason by the defaults: confirm what
// deletes, requires confirmation or destroys; allow the rest.
func defaults(eff policy.Effective, out *call.Decision) {
	switch {
	case eff.Effect.Value == hints.EffectDelete: // the reason people grasp first
		out.Verdict, out.Reason = call.Confirm, "the call deletes (effect delete, from "+sourceWords(eff.Effect.Source)+")"
	case eff.RequiresConfirmation.Value && given(eff.RequiresConfirmation.Source):
		out.Verdict, out.Reason = call.Confirm, "the call requires confirmation (requiresConfirmation, from "+sourceWords(eff.RequiresConfirmation.Source)+")"
	case eff.NeedsConfirmation():
		out.Verdict, out.Reason = call.Confirm, "the call is destructive (destructiveHint, from "+sourceWords(eff.Destructive.Source)+")"
	case eff.Effect.Value == hints.EffectRead:
		out.Verdict, out.Reason = call.Allow, reasonRead
	case eff.Effect.Value == hints.EffectExternal:
		out.Verdict, out.Reason = call.Allow, reasonExternal
	default:
		out.Verdict, out.Reason = call.Allow, reasonWrite
	}
}

// match tries the rules in order and fills out from the first that
// matches. A rule that cannot be evaluated stops the search and denies the
// call: a broken rule never lets a call through that it was meant to stop.
func (d *Decider) match(c *call.Call, server string, effect hints.Effect, out *call.Decision) bool {
	var (
		args    map[string]any
		argsErr error
		decoded bool
	)
	principal := ""
	if c.Client != nil {
		principal = c.Client.Principal
	}
	for i := range d.rules {
		r := &d.rules[i]
		if r.servers != nil && !r.servers[server] {
			continue
		}
		if len(r.Tools) > 0 && !matchAny(r.Tools, c.Target) {
			continue
		}
		if r.cond != nil {
			if r.cond.ReadsArgs() && !decoded {
				if argsErr = rules.CheckArguments(c.Arguments, d.maxArgs); argsErr == nil {
					args, argsErr = c.Args()
				}
				decoded = true
			}
			if r.cond.ReadsArgs() && argsErr != nil {
				out.Verdict, out.Rule = call.Deny, r.Name
				out.Reason = fmt.Sprintf("the decision rule %q reads the arguments, which cannot be read: %v", r.Name, argsErr)
				return true
			}
			vars := rules.Vars{Server: server, Tool: c.Target, Principal: principal, Effect: string(effect), Args: args}
			if f := c.Flow; f != nil {
				vars.FlowFrom, vars.FlowCallsAgo = []string{f.From}, f.CallsAgo
			}
			ok, err := r.cond.Eval(vars)
			if err != nil {
				out.Verdict, out.Rule = call.Deny, r.Name
				out.Reason = fmt.Sprintf("the decision rule %q could not be evaluated (%v); read optional arguments with has(args.x)", r.Name, err)
				return true
			}
			if !ok {
				continue
			}
			out.Args = r.cond.Args()
		}
		out.Verdict, out.Rule, out.Reason, out.OutOfBand = r.Verdict, r.Name, r.Reason, r.OutOfBand
		if r.cond == nil || !r.cond.ReadsFlow() {
			d.applyFlow(c.Flow, out)
		}
		return true
	}
	return false
}

func (d *Decider) modeOf(server string) Mode {
	if m, ok := d.servers[server]; ok {
		return m
	}
	return d.mode
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// given reports a value someone gave rather than one derived or defaulted.
func given(s policy.Source) bool { return s != policy.SourceDerived && s != policy.SourceDefault }

func sourceWords(s policy.Source) string {
	switch s {
	case policy.SourceOverride:
		return "the deployer's override"
	case policy.SourceResolved:
		return "this call's resolution"
	case policy.SourceStatic:
		return "the tool's declaration"
	case policy.SourceDerived:
		return "derived from the annotations"
	}
	return "the protocol's defaults"
}
