// Package policy turns what is known about one tool call (static
// annotations and hints from tools/list, a resolution from tools/resolve,
// and a deployer's overrides) into effective values, each with the place
// it came from, and into the two decisions clients make before a call: does
// it need the user's confirmation, and is it safe to retry.
//
// It is pure: no transport, no I/O.
package policy

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// Source says where an effective value came from.
type Source string

const (
	// SourceOverride: a deployer's override, which wins over the server.
	SourceOverride Source = "override"
	// SourceResolved: the server's tools/resolve answer for these arguments.
	SourceResolved Source = "resolved"
	// SourceStatic: the tool's definition in tools/list; only for a call
	// that was not resolved.
	SourceStatic Source = "static"
	// SourceDerived: a hint the server left out, derived from the
	// effective annotations (the resolved ones for a resolved call).
	SourceDerived Source = "derived"
	// SourceDefault: the protocol's default for a value nobody gave.
	SourceDefault Source = "default"
)

// Value is an effective value and where it came from.
type Value[T any] struct {
	Value  T      `json:"value"`
	Source Source `json:"source"`
}

// Effective holds the effective annotations and hints of one call.
type Effective struct {
	ReadOnly             Value[bool]              `json:"readOnlyHint"`
	Destructive          Value[bool]              `json:"destructiveHint"`
	Idempotent           Value[bool]              `json:"idempotentHint"`
	OpenWorld            Value[bool]              `json:"openWorldHint"`
	Effect               Value[hints.Effect]      `json:"effect"`
	IdempotentCall       Value[bool]              `json:"idempotent"`
	RequiresConfirmation Value[bool]              `json:"requiresConfirmation"`
	ResultSensitivity    Value[hints.Sensitivity] `json:"resultSensitivity"`
}

// Input is everything known about a call before it is made.
type Input struct {
	// Static are the annotations in tools/list; nil if the tool has none.
	Static *mcp.ToolAnnotations
	// StaticHints are the hints in the tool's _meta in tools/list. They
	// count only for a call that was not resolved.
	StaticHints hints.Hints
	// Resolved are the annotations of a successful resolution for these
	// exact arguments; nil when there is none.
	Resolved *preflight.Annotations
	// ResolvedHints are the hints that came with the resolution.
	ResolvedHints hints.Hints
	// Overrides are a deployer's hints for this tool; they win.
	Overrides hints.Hints
}

// Evaluate returns the effective values of in.
//
// A resolved call (Resolved set) is described by its resolution alone:
// its annotations are the resolved ones, and each hint comes from the
// overrides, else the resolution, else is derived from the resolved
// annotations ([hints.Derive]), else takes its default. The tool's static
// declaration in tools/list is the worst case of every call, so it says
// nothing about this one and is not consulted.
//
// A call that was not resolved takes its annotations from tools/list,
// else the protocol defaults, and each hint from the overrides, else
// tools/list, else derived from those annotations, else its default.
//
// The only default a hint can take is an unknown result sensitivity
// (""), since effect, idempotency and confirmation are always derivable.
func Evaluate(in Input) Effective {
	var e Effective
	given := Value[hints.Hints]{in.StaticHints, SourceStatic}
	switch {
	case in.Resolved != nil:
		r := *in.Resolved
		e.ReadOnly = Value[bool]{r.ReadOnlyHint, SourceResolved}
		e.Destructive = Value[bool]{r.DestructiveHint, SourceResolved}
		e.Idempotent = Value[bool]{r.IdempotentHint, SourceResolved}
		e.OpenWorld = Value[bool]{r.OpenWorldHint, SourceResolved}
		given = Value[hints.Hints]{in.ResolvedHints, SourceResolved}
	case in.Static != nil:
		s := preflight.AnnotationsOf(in.Static)
		e.ReadOnly = Value[bool]{s.ReadOnlyHint, SourceStatic}
		e.Idempotent = Value[bool]{s.IdempotentHint, SourceStatic}
		e.Destructive = Value[bool]{s.DestructiveHint, SourceDefault}
		if in.Static.DestructiveHint != nil {
			e.Destructive.Source = SourceStatic
		}
		e.OpenWorld = Value[bool]{s.OpenWorldHint, SourceDefault}
		if in.Static.OpenWorldHint != nil {
			e.OpenWorld.Source = SourceStatic
		}
	default:
		d := preflight.DefaultAnnotations
		e.ReadOnly = Value[bool]{d.ReadOnlyHint, SourceDefault}
		e.Destructive = Value[bool]{d.DestructiveHint, SourceDefault}
		e.Idempotent = Value[bool]{d.IdempotentHint, SourceDefault}
		e.OpenWorld = Value[bool]{d.OpenWorldHint, SourceDefault}
	}

	derived := hints.Derive(e.Annotations())
	layers := []struct {
		h   hints.Hints
		src Source
	}{
		{in.Overrides, SourceOverride},
		{given.Value, given.Source},
		{derived, SourceDerived},
	}
	e.Effect = pick(layers, func(h hints.Hints) (hints.Effect, bool) { return h.Effect, h.Effect != "" })
	e.IdempotentCall = pick(layers, func(h hints.Hints) (bool, bool) { return deref(h.Idempotent) })
	e.RequiresConfirmation = pick(layers, func(h hints.Hints) (bool, bool) { return deref(h.RequiresConfirmation) })
	e.ResultSensitivity = pick(layers, func(h hints.Hints) (hints.Sensitivity, bool) {
		return h.ResultSensitivity, h.ResultSensitivity != ""
	})
	if e.ResultSensitivity.Source == "" {
		e.ResultSensitivity.Source = SourceDefault
	}
	return e
}

func pick[T any](layers []struct {
	h   hints.Hints
	src Source
}, get func(hints.Hints) (T, bool)) Value[T] {
	for _, l := range layers {
		if v, ok := get(l.h); ok {
			return Value[T]{v, l.src}
		}
	}
	return Value[T]{}
}

func deref(b *bool) (bool, bool) {
	if b == nil {
		return false, false
	}
	return *b, true
}

// Annotations returns the effective annotation values.
func (e Effective) Annotations() preflight.Annotations {
	return preflight.Annotations{
		ReadOnlyHint:    e.ReadOnly.Value,
		DestructiveHint: e.Destructive.Value,
		IdempotentHint:  e.Idempotent.Value,
		OpenWorldHint:   e.OpenWorld.Value,
	}
}

// Hints returns the effective hint values (derived ones included).
func (e Effective) Hints() hints.Hints {
	return hints.Hints{
		Effect:               e.Effect.Value,
		Idempotent:           hints.Bool(e.IdempotentCall.Value),
		RequiresConfirmation: hints.Bool(e.RequiresConfirmation.Value),
		ResultSensitivity:    e.ResultSensitivity.Value,
	}
}

// GivenHints returns the hints that someone gave (a deployer, a
// resolution, tools/list), leaving out the derived ones.
func (e Effective) GivenHints() hints.Hints {
	var h hints.Hints
	if e.Effect.Source != SourceDerived {
		h.Effect = e.Effect.Value
	}
	if e.IdempotentCall.Source != SourceDerived {
		h.Idempotent = hints.Bool(e.IdempotentCall.Value)
	}
	if e.RequiresConfirmation.Source != SourceDerived {
		h.RequiresConfirmation = hints.Bool(e.RequiresConfirmation.Value)
	}
	if e.ResultSensitivity.Source != SourceDefault {
		h.ResultSensitivity = e.ResultSensitivity.Value
	}
	return h
}

// NeedsConfirmation reports whether the call should be confirmed by the
// user: the effective requiresConfirmation hint, which, when neither the
// deployer nor the server gave one, is derived from the effective
// annotations as "mutating and destructive".
func (e Effective) NeedsConfirmation() bool { return e.RequiresConfirmation.Value }

// SafeToRetry reports whether repeating the call has no additional effect:
// it is read-only, or idempotent by the effective idempotent hint.
func (e Effective) SafeToRetry() bool { return e.ReadOnly.Value || e.IdempotentCall.Value }
