// Package hints reads, writes, validates and combines the advisory policy
// hints of seed 002, carried in a tool's (or a resolution's) _meta under the
// keys mcp.dev/effect, mcp.dev/idempotent, mcp.dev/requiresConfirmation and
// mcp.dev/resultSensitivity.
//
// Hints are advisory and server-asserted: a deployer may override them
// ([Merge]), and a client derives the ones a server left out from the
// standard annotations ([Derive]). Reading is strict: an unknown value is an
// error that lists the allowed ones.
package hints

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/preflightmcp/preflight"
)

// Effect is the primary side effect of a tool call.
type Effect string

// The effects of seed 002, from least to most severe.
const (
	EffectRead     Effect = "read"
	EffectWrite    Effect = "write"
	EffectExternal Effect = "external"
	EffectDelete   Effect = "delete"
)

// Effects lists the valid effects from least to most severe.
var Effects = []Effect{EffectRead, EffectWrite, EffectExternal, EffectDelete}

// Rank orders effects by severity: read < write < external < delete.
// An empty or unknown effect ranks -1.
func (e Effect) Rank() int { return slices.Index(Effects, e) }

// Sensitivity is the sensitivity of a tool's result content.
type Sensitivity string

// The sensitivities of seed 002, from least to most sensitive.
const (
	SensitivityPublic       Sensitivity = "public"
	SensitivityInternal     Sensitivity = "internal"
	SensitivityConfidential Sensitivity = "confidential"
	SensitivityRestricted   Sensitivity = "restricted"
)

// Sensitivities lists the valid sensitivities from least to most sensitive.
var Sensitivities = []Sensitivity{SensitivityPublic, SensitivityInternal, SensitivityConfidential, SensitivityRestricted}

// Rank orders sensitivities: public < internal < confidential < restricted.
// An empty or unknown sensitivity ranks -1.
func (s Sensitivity) Rank() int { return slices.Index(Sensitivities, s) }

// Hints are the four policy hints. The zero value of each field means the
// hint is absent.
type Hints struct {
	Effect               Effect
	Idempotent           *bool
	RequiresConfirmation *bool
	ResultSensitivity    Sensitivity
}

// Bool returns a pointer to v, for the optional boolean hints.
func Bool(v bool) *bool { return &v }

// IsZero reports whether no hint is set.
func (h Hints) IsZero() bool {
	return h.Effect == "" && h.Idempotent == nil && h.RequiresConfirmation == nil && h.ResultSensitivity == ""
}

// Error is a problem with one hint: the key, the value found and what is
// allowed.
type Error struct {
	Key     string
	Value   any
	Allowed []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: invalid value %s (allowed: %s)", e.Key, describe(e.Value), strings.Join(e.Allowed, ", "))
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v (%T)", v, v)
	}
}

func effectNames() []string {
	out := make([]string, len(Effects))
	for i, e := range Effects {
		out[i] = string(e)
	}
	return out
}

func sensitivityNames() []string {
	out := make([]string, len(Sensitivities))
	for i, s := range Sensitivities {
		out[i] = string(s)
	}
	return out
}

var boolNames = []string{"true", "false"}

// keys names the four hints where they are stored.
type keys struct{ effect, idempotent, confirmation, sensitivity string }

// metaKeys are the scalar _meta keys of seed 002.
var metaKeys = keys{preflight.MetaEffect, preflight.MetaIdempotent, preflight.MetaRequiresConfirmation, preflight.MetaResultSensitivity}

// objectKeys are the names inside the policy-hints object.
var objectKeys = keys{"effect", "idempotent", "requiresConfirmation", "resultSensitivity"}

// Read returns the hints in meta. Keys that are absent stay unset; a key
// with an invalid value is reported as an [*Error], all of them joined, and
// the valid ones are still returned.
func Read(meta map[string]any) (Hints, error) { return read(meta, metaKeys, "") }

// ReadObject returns the hints in v, the value of
// _meta["mcp.dev/policy-hints"] in an extension-shape result (see
// [preflight.MetaPolicyHints]). A nil v (the key was absent) gives no
// hints and no error; a v that is not an object is an error. Other names
// in the object are ignored; invalid values are reported as in [Read],
// with keys such as "mcp.dev/policy-hints.effect".
func ReadObject(v any) (Hints, error) {
	if v == nil {
		return Hints{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Hints{}, fmt.Errorf("%s: %s is not an object", preflight.MetaPolicyHints, describe(v))
	}
	return read(m, objectKeys, preflight.MetaPolicyHints+".")
}

func read(m map[string]any, k keys, prefix string) (Hints, error) {
	var h Hints
	var errs []error
	if v, ok := m[k.effect]; ok {
		s, isString := v.(string)
		if e := Effect(s); isString && e.Rank() >= 0 {
			h.Effect = e
		} else {
			errs = append(errs, &Error{prefix + k.effect, v, effectNames()})
		}
	}
	if v, ok := m[k.idempotent]; ok {
		if b, isBool := v.(bool); isBool {
			h.Idempotent = &b
		} else {
			errs = append(errs, &Error{prefix + k.idempotent, v, boolNames})
		}
	}
	if v, ok := m[k.confirmation]; ok {
		if b, isBool := v.(bool); isBool {
			h.RequiresConfirmation = &b
		} else {
			errs = append(errs, &Error{prefix + k.confirmation, v, boolNames})
		}
	}
	if v, ok := m[k.sensitivity]; ok {
		s, isString := v.(string)
		if r := Sensitivity(s); isString && r.Rank() >= 0 {
			h.ResultSensitivity = r
		} else {
			errs = append(errs, &Error{prefix + k.sensitivity, v, sensitivityNames()})
		}
	}
	return h, errors.Join(errs...)
}

// Validate reports hints set to values outside the vocabulary, as
// [*Error]s joined.
func (h Hints) Validate() error {
	var errs []error
	if h.Effect != "" && h.Effect.Rank() < 0 {
		errs = append(errs, &Error{preflight.MetaEffect, string(h.Effect), effectNames()})
	}
	if h.ResultSensitivity != "" && h.ResultSensitivity.Rank() < 0 {
		errs = append(errs, &Error{preflight.MetaResultSensitivity, string(h.ResultSensitivity), sensitivityNames()})
	}
	return errors.Join(errs...)
}

// Write returns a copy of meta with the hints that are set written into it;
// keys of hints that are unset are left as they were. meta is not modified.
func (h Hints) Write(meta map[string]any) map[string]any {
	out := maps.Clone(meta)
	if out == nil {
		out = make(map[string]any, 4)
	}
	return h.write(out, metaKeys)
}

func (h Hints) write(out map[string]any, k keys) map[string]any {
	if h.Effect != "" {
		out[k.effect] = string(h.Effect)
	}
	if h.Idempotent != nil {
		out[k.idempotent] = *h.Idempotent
	}
	if h.RequiresConfirmation != nil {
		out[k.confirmation] = *h.RequiresConfirmation
	}
	if h.ResultSensitivity != "" {
		out[k.sensitivity] = string(h.ResultSensitivity)
	}
	return out
}

// Without returns a copy of meta without the four scalar hint keys, nil if
// nothing else is left. meta is not modified.
func Without(meta map[string]any) map[string]any {
	out := maps.Clone(meta)
	for _, k := range []string{metaKeys.effect, metaKeys.idempotent, metaKeys.confirmation, metaKeys.sensitivity} {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Object returns the hints that are set as the object an extension-shape
// result carries under _meta["mcp.dev/policy-hints"] (see
// [preflight.MetaPolicyHints]), or nil when none is set.
func (h Hints) Object() map[string]any {
	if h.IsZero() {
		return nil
	}
	return h.write(make(map[string]any, 4), objectKeys)
}

// Merge returns base with every hint that is set in over replacing base's.
// It is how a deployer's hints win over a server's.
func Merge(base, over Hints) Hints {
	if over.Effect != "" {
		base.Effect = over.Effect
	}
	if over.Idempotent != nil {
		base.Idempotent = over.Idempotent
	}
	if over.RequiresConfirmation != nil {
		base.RequiresConfirmation = over.RequiresConfirmation
	}
	if over.ResultSensitivity != "" {
		base.ResultSensitivity = over.ResultSensitivity
	}
	return base
}

// WorstCase returns hints that bound every one of list: the most severe
// effect, idempotent only if all say so, confirmation if any asks for it,
// the highest sensitivity. A hint absent from any element is absent from
// the result, since absent means unknown.
func WorstCase(list ...Hints) Hints {
	if len(list) == 0 {
		return Hints{}
	}
	out := list[0]
	for _, h := range list[1:] {
		if h.Effect == "" || out.Effect == "" {
			out.Effect = ""
		} else if h.Effect.Rank() > out.Effect.Rank() {
			out.Effect = h.Effect
		}
		out.Idempotent = and(out.Idempotent, h.Idempotent)
		out.RequiresConfirmation = or(out.RequiresConfirmation, h.RequiresConfirmation)
		if h.ResultSensitivity == "" || out.ResultSensitivity == "" {
			out.ResultSensitivity = ""
		} else if h.ResultSensitivity.Rank() > out.ResultSensitivity.Rank() {
			out.ResultSensitivity = h.ResultSensitivity
		}
	}
	return out
}

func and(a, b *bool) *bool {
	if a == nil || b == nil {
		return nil
	}
	return Bool(*a && *b)
}

func or(a, b *bool) *bool {
	switch {
	case a != nil && *a, b != nil && *b:
		return Bool(true)
	case a == nil || b == nil:
		return nil
	}
	return Bool(false)
}

// Derive returns the hints that follow from annotations alone, for a tool
// that leaves them out: effect read for a read-only tool and write
// otherwise (the annotations cannot tell a delete), idempotent for a
// read-only or idempotent tool, confirmation for a destructive one. Result
// sensitivity cannot be derived and stays unset.
func Derive(a preflight.Annotations) Hints {
	return Hints{
		Effect:               derivedEffect(a),
		Idempotent:           Bool(derivedIdempotent(a)),
		RequiresConfirmation: Bool(!a.ReadOnlyHint && a.DestructiveHint),
	}
}

func derivedEffect(a preflight.Annotations) Effect {
	if a.ReadOnlyHint {
		return EffectRead
	}
	return EffectWrite
}

func derivedIdempotent(a preflight.Annotations) bool { return a.ReadOnlyHint || a.IdempotentHint }

// Contradiction is a hint that disagrees with the standard annotations.
type Contradiction struct {
	Key    string // the hint's _meta key
	Reason string // what disagrees, in words
}

func (c Contradiction) String() string { return c.Key + ": " + c.Reason }

// Contradictions lists the ways h disagrees with a (core defaults applied):
// a read effect on a tool that is not read-only, a mutating effect on a
// read-only tool, a delete that is not destructive, an external effect in a
// closed world, and a tool idempotent by its annotations but not by its
// hints.
func Contradictions(a preflight.Annotations, h Hints) []Contradiction {
	var out []Contradiction
	switch {
	case h.Effect == EffectRead && !a.ReadOnlyHint:
		out = append(out, Contradiction{preflight.MetaEffect, `"read" but readOnlyHint is false`})
	case h.Effect != "" && h.Effect != EffectRead && a.ReadOnlyHint:
		out = append(out, Contradiction{preflight.MetaEffect, fmt.Sprintf("%q but readOnlyHint is true", h.Effect)})
	}
	if h.Effect == EffectDelete && !a.ReadOnlyHint && !a.DestructiveHint {
		out = append(out, Contradiction{preflight.MetaEffect, `"delete" but destructiveHint is false`})
	}
	if h.Effect == EffectExternal && !a.OpenWorldHint {
		out = append(out, Contradiction{preflight.MetaEffect, `"external" but openWorldHint is false`})
	}
	if h.Idempotent != nil && !*h.Idempotent && !a.ReadOnlyHint && a.IdempotentHint {
		out = append(out, Contradiction{preflight.MetaIdempotent, "false but idempotentHint is true"})
	}
	return out
}
