package hints_test

import (
	"slices"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// boundsCase is one pair of declarations and the keys in which the
// resolution exceeds the static one.
type boundsCase struct {
	name             string
	static, resolved hints.Declaration
	want             []string
}

var (
	readOnly = preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}
	additive = preflight.Annotations{}
	idem     = preflight.Annotations{IdempotentHint: true}
	destroy  = preflight.Annotations{DestructiveHint: true, IdempotentHint: true}
)

func decl(a preflight.Annotations, h hints.Hints) hints.Declaration {
	return hints.Declaration{Annotations: a, Hints: h}
}

var boundsCases = []boundsCase{
	// The annotations, by the extension's monotonic rules.
	{"read-only stays read-only", decl(preflight.Annotations{ReadOnlyHint: true}, hints.Hints{}), decl(additive, hints.Hints{}), []string{"readOnlyHint"}},
	{"not destructive stays so", decl(additive, hints.Hints{}), decl(preflight.Annotations{DestructiveHint: true}, hints.Hints{}), []string{"destructiveHint"}},
	{"idempotent stays so", decl(idem, hints.Hints{}), decl(additive, hints.Hints{}), []string{"idempotentHint"}},
	{"a read-only result of an idempotent tool", decl(idem, hints.Hints{}), decl(preflight.Annotations{ReadOnlyHint: true}, hints.Hints{}), nil},
	{"closed world stays closed", decl(additive, hints.Hints{}), decl(preflight.Annotations{OpenWorldHint: true}, hints.Hints{}), []string{"openWorldHint"}},
	{"the defaults bound everything", decl(preflight.DefaultAnnotations, hints.Hints{}), decl(preflight.DefaultAnnotations, hints.Hints{}), nil},
	{"safer is fine", decl(preflight.DefaultAnnotations, hints.Hints{}), decl(readOnly, hints.Hints{}), nil},
	{"every annotation at once", decl(preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}, hints.Hints{}),
		decl(preflight.Annotations{DestructiveHint: true, OpenWorldHint: true}, hints.Hints{}), []string{"readOnlyHint", "idempotentHint", "openWorldHint"}},

	// The hints, where the static declaration sets them.
	{"a more severe effect", decl(destroy, hints.Hints{Effect: hints.EffectWrite}), decl(destroy, hints.Hints{Effect: hints.EffectDelete}), []string{preflight.MetaEffect}},
	{"the same effect", decl(destroy, hints.Hints{Effect: hints.EffectDelete}), decl(destroy, hints.Hints{Effect: hints.EffectDelete}), nil},
	{"a milder effect", decl(destroy, hints.Hints{Effect: hints.EffectDelete}), decl(readOnly, hints.Hints{Effect: hints.EffectRead}), nil},
	{"no static effect bounds nothing", decl(destroy, hints.Hints{}), decl(destroy, hints.Hints{Effect: hints.EffectDelete}), nil},
	{"a left-out effect is derived from the annotations", decl(preflight.DefaultAnnotations, hints.Hints{Effect: hints.EffectRead}),
		decl(additive, hints.Hints{}), []string{preflight.MetaEffect}},
	{"a derived effect within the bound", decl(destroy, hints.Hints{Effect: hints.EffectExternal}), decl(destroy, hints.Hints{}), nil},
	{"a more sensitive result", decl(readOnly, hints.Hints{ResultSensitivity: hints.SensitivityInternal}),
		decl(readOnly, hints.Hints{ResultSensitivity: hints.SensitivityRestricted}), []string{preflight.MetaResultSensitivity}},
	{"a less sensitive result", decl(readOnly, hints.Hints{ResultSensitivity: hints.SensitivityConfidential}),
		decl(readOnly, hints.Hints{ResultSensitivity: hints.SensitivityPublic}), nil},
	{"a left-out sensitivity is unknown, not riskier", decl(readOnly, hints.Hints{ResultSensitivity: hints.SensitivityPublic}), decl(readOnly, hints.Hints{}), nil},
	{"idempotent by hint stays so", decl(destroy, hints.Hints{Idempotent: hints.Bool(true)}),
		decl(destroy, hints.Hints{Idempotent: hints.Bool(false)}), []string{preflight.MetaIdempotent}},
	{"a left-out idempotent hint is derived", decl(additive, hints.Hints{Idempotent: hints.Bool(true)}), decl(additive, hints.Hints{}), []string{preflight.MetaIdempotent}},
	{"a read-only result need not be idempotent", decl(destroy, hints.Hints{Idempotent: hints.Bool(true)}),
		decl(readOnly, hints.Hints{Idempotent: hints.Bool(false)}), nil},
	{"confirmation is no bound", decl(destroy, hints.Hints{RequiresConfirmation: hints.Bool(true)}),
		decl(readOnly, hints.Hints{RequiresConfirmation: hints.Bool(false)}), nil},
	{"annotations and hints together", decl(readOnly, hints.Hints{Effect: hints.EffectRead, ResultSensitivity: hints.SensitivityPublic}),
		decl(destroy, hints.Hints{Effect: hints.EffectDelete, ResultSensitivity: hints.SensitivityRestricted}),
		[]string{"readOnlyHint", preflight.MetaEffect, preflight.MetaResultSensitivity}},
}

func TestExceeds(t *testing.T) {
	for _, c := range boundsCases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, x := range hints.Exceeds(c.static, c.resolved) {
				got = append(got, x.Key)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Exceeds = %v, want %v", got, c.want)
			}
			// Every declaration is within its own bounds.
			if over := hints.Exceeds(c.resolved, c.resolved); len(over) > 0 {
				t.Errorf("resolution exceeds itself: %v", over)
			}
		})
	}
}

// TestExceedsWorstCase: the worst case of any set of declarations bounds
// each of them, the property a table relies on.
func TestExceedsWorstCase(t *testing.T) {
	var anns []preflight.Annotations
	var hs []hints.Hints
	for _, c := range boundsCases {
		for _, d := range []hints.Declaration{c.static, c.resolved} {
			anns, hs = append(anns, d.Annotations), append(hs, d.Hints)
		}
	}
	for n := 1; n <= len(anns); n++ {
		worst := decl(preflight.WorstCase(anns[:n]...), hints.WorstCase(hs[:n]...))
		for i := range n {
			if over := hints.Exceeds(worst, decl(anns[i], hs[i])); len(over) > 0 {
				t.Fatalf("the worst case of %d declarations %+v does not bound number %d: %v", n, worst, i, over)
			}
		}
	}
}

func TestExcessString(t *testing.T) {
	for x, want := range map[hints.Excess]string{
		{Key: "readOnlyHint", Static: true, Resolved: false}:                                 "readOnlyHint (static true, resolved false)",
		{Key: preflight.MetaEffect, Static: hints.EffectWrite, Resolved: hints.EffectDelete}: `mcp.dev/effect (static "write", resolved "delete")`,
	} {
		if got := x.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
