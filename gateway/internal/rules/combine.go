package rules

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// override is a compiled [Override].
type override struct {
	ann      AnnotationPatch
	hints    hints.Hints
	mutating bool // the override says the tool mutates: no resolution makes it read-only
}

func compileOverride(server, tool string, o Override) (*override, error) {
	h, _ := o.Hints.hints() // validated before
	ov := &override{ann: o.Annotations, hints: h}
	a := o.Annotations
	ov.mutating = a.ReadOnlyHint != nil && !*a.ReadOnlyHint ||
		a.DestructiveHint != nil && *a.DestructiveHint ||
		h.Effect != "" && h.Effect != hints.EffectRead
	if ov.mutating && a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return nil, &Error{Server: server, Tool: tool, Err: fmt.Errorf("sets readOnlyHint true but describes a mutating tool (destructiveHint true or effect %q)", h.Effect)}
	}
	return ov, nil
}

// base is what a call of one tool starts from: the upstream's static
// declaration as far as it is trusted, and the deployer's override.
type base struct {
	static      *mcp.ToolAnnotations // nil: the protocol's defaults (also for an untrusted upstream)
	staticAnn   preflight.Annotations
	staticHints hints.Hints
	ov          *override // nil: none
	// declared are the upstream's own static annotations and hints,
	// whatever its trust: the bounds its tools/resolve answers are checked
	// against.
	declaredAnn   preflight.Annotations
	declaredHints hints.Hints
}

func newBase(t *mcp.Tool, untrusted bool, ov *override) base {
	h, _ := hints.Read(t.Meta) // invalid static hints are left out; lint reports them
	b := base{
		static:        t.Annotations,
		staticAnn:     preflight.AnnotationsOf(t.Annotations),
		staticHints:   h,
		ov:            ov,
		declaredAnn:   preflight.AnnotationsOf(t.Annotations),
		declaredHints: h,
	}
	if untrusted {
		b.static = nil
		b.staticAnn = preflight.DefaultAnnotations
		b.staticHints = cautionOnly(h)
	}
	return b
}

// effective combines a resolution (nil: none) with the base, the
// override on top, into effective values with their sources.
func (b *base) effective(resolved *preflight.Annotations, rh hints.Hints) policy.Effective {
	in := policy.Input{Static: b.static, StaticHints: b.staticHints, Resolved: resolved, ResolvedHints: rh}
	if b.ov == nil {
		return policy.Evaluate(in)
	}
	in.Overrides = b.ov.hints
	if b.ov.ann.IsZero() && !b.ov.mutating {
		return policy.Evaluate(in)
	}
	before := policy.Evaluate(policy.Input{Static: b.static, Resolved: resolved})
	cur := before.Annotations()
	final := b.ov.ann.apply(cur)
	forced := b.ov.mutating && final.ReadOnlyHint
	if forced {
		final.ReadOnlyHint = false
	}
	in.Resolved = &final
	e := policy.Evaluate(in)
	label := func(v *policy.Value[bool], set *bool, src policy.Source) {
		v.Source = src
		if set != nil {
			v.Source = policy.SourceOverride
		}
	}
	label(&e.ReadOnly, b.ov.ann.ReadOnlyHint, before.ReadOnly.Source)
	if forced {
		e.ReadOnly.Source = policy.SourceOverride
	}
	label(&e.Destructive, b.ov.ann.DestructiveHint, before.Destructive.Source)
	label(&e.Idempotent, b.ov.ann.IdempotentHint, before.Idempotent.Source)
	label(&e.OpenWorld, b.ov.ann.OpenWorldHint, before.OpenWorld.Source)
	return e
}

// exceeds lists where a resolution (a, h) is riskier than the upstream's
// static declaration (static, sh), by the project's one bounds check
// ([hints.Exceeds]), as the names of the keys that exceed.
func exceeds(a preflight.Annotations, h hints.Hints, static preflight.Annotations, sh hints.Hints) []string {
	var out []string
	for _, x := range hints.Exceeds(hints.Declaration{Annotations: static, Hints: sh}, hints.Declaration{Annotations: a, Hints: h}) {
		out = append(out, x.Key)
	}
	return out
}

// cautionOnly keeps the hints of h that add caution to a tool assumed
// to mutate: an effect of write or worse, idempotent false, confirmation
// required, a sensitivity above public.
func cautionOnly(h hints.Hints) hints.Hints {
	var out hints.Hints
	if h.Effect.Rank() >= hints.EffectWrite.Rank() {
		out.Effect = h.Effect
	}
	if h.Idempotent != nil && !*h.Idempotent {
		out.Idempotent = hints.Bool(false)
	}
	if h.RequiresConfirmation != nil && *h.RequiresConfirmation {
		out.RequiresConfirmation = hints.Bool(true)
	}
	if h.ResultSensitivity.Rank() > hints.SensitivityPublic.Rank() {
		out.ResultSensitivity = h.ResultSensitivity
	}
	return out
}

// cautious returns the more cautious of a and b, hint by hint: the more
// severe effect and sensitivity of those given, idempotent only if both
// say so, confirmation if either asks for it.
func cautious(a, b hints.Hints) hints.Hints {
	var out hints.Hints
	out.Effect = a.Effect
	if b.Effect.Rank() > a.Effect.Rank() {
		out.Effect = b.Effect
	}
	out.ResultSensitivity = a.ResultSensitivity
	if b.ResultSensitivity.Rank() > a.ResultSensitivity.Rank() {
		out.ResultSensitivity = b.ResultSensitivity
	}
	switch {
	case a.Idempotent != nil && !*a.Idempotent, b.Idempotent != nil && !*b.Idempotent:
		out.Idempotent = hints.Bool(false)
	case a.Idempotent != nil && b.Idempotent != nil:
		out.Idempotent = hints.Bool(true)
	}
	switch {
	case a.RequiresConfirmation != nil && *a.RequiresConfirmation, b.RequiresConfirmation != nil && *b.RequiresConfirmation:
		out.RequiresConfirmation = hints.Bool(true)
	case a.RequiresConfirmation != nil && b.RequiresConfirmation != nil:
		out.RequiresConfirmation = hints.Bool(false)
	}
	return out
}
