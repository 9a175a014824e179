package hints

import (
	"fmt"

	"github.com/preflightmcp/preflight"
)

// A Declaration is what a server declares about a call: the four
// annotations, core defaults applied, and the policy hints it sets. A
// tool's entry in tools/list is its static declaration; a tools/resolve
// answer declares one call.
type Declaration struct {
	Annotations preflight.Annotations
	Hints       Hints
}

// An Excess is one way a resolution is riskier than the static
// declaration of its tool.
type Excess struct {
	// Key is the annotation ("readOnlyHint") or the hint's _meta key
	// ("mcp.dev/effect").
	Key string
	// Static and Resolved are the two values: a bool, an [Effect] or a
	// [Sensitivity].
	Static, Resolved any
}

func (x Excess) String() string {
	return fmt.Sprintf("%s (static %s, resolved %s)", x.Key, valueText(x.Static), valueText(x.Resolved))
}

func valueText(v any) string {
	switch v := v.(type) {
	case Effect:
		return fmt.Sprintf("%q", v)
	case Sensitivity:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprint(v)
}

// Exceeds lists the ways resolved is riskier than static; none means the
// resolution stays within the bounds the static declaration sets. It is
// the one bounds check of the module: servers withhold such a resolution,
// clients reject it and lint reports it.
//
// The annotations follow the extension's monotonic rules:
//
//   - static read-only: every resolution is read-only;
//   - static not destructive (and not read-only): no resolution is destructive;
//   - static idempotent: every non-read-only resolution is idempotent;
//   - static closed world: no resolution is open world.
//
// The hints bound only where the static declaration sets them: no more
// severe effect, no more sensitive result, and, for a static
// mcp.dev/idempotent true, every non-read-only resolution idempotent. A
// hint the resolution leaves out is the one derived from its annotations
// ([Derive]), as a client takes it; a result sensitivity it leaves out is
// unknown, not riskier. mcp.dev/requiresConfirmation is no bound: lifting
// the worst case's confirmation for a harmless call is what resolution is
// for.
func Exceeds(static, resolved Declaration) []Excess {
	var out []Excess
	sa, ra := static.Annotations, resolved.Annotations
	if sa.ReadOnlyHint && !ra.ReadOnlyHint {
		out = append(out, Excess{"readOnlyHint", true, false})
	}
	if !sa.ReadOnlyHint && !sa.DestructiveHint && !ra.ReadOnlyHint && ra.DestructiveHint {
		out = append(out, Excess{"destructiveHint", false, true})
	}
	if sa.IdempotentHint && !ra.ReadOnlyHint && !ra.IdempotentHint {
		out = append(out, Excess{"idempotentHint", true, false})
	}
	if !sa.OpenWorldHint && ra.OpenWorldHint {
		out = append(out, Excess{"openWorldHint", false, true})
	}

	sh, rh := static.Hints, resolved.Hints
	if sh.Effect != "" {
		e := rh.Effect
		if e == "" {
			e = derivedEffect(ra)
		}
		if e.Rank() > sh.Effect.Rank() {
			out = append(out, Excess{preflight.MetaEffect, sh.Effect, e})
		}
	}
	if sh.Idempotent != nil && *sh.Idempotent && !ra.ReadOnlyHint {
		idem := derivedIdempotent(ra)
		if rh.Idempotent != nil {
			idem = *rh.Idempotent
		}
		if !idem {
			out = append(out, Excess{preflight.MetaIdempotent, true, false})
		}
	}
	if sh.ResultSensitivity != "" && rh.ResultSensitivity.Rank() > sh.ResultSensitivity.Rank() {
		out = append(out, Excess{preflight.MetaResultSensitivity, sh.ResultSensitivity, rh.ResultSensitivity})
	}
	return out
}
