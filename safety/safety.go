// Package safety turns what is known of a server's tools into safety
// tables for people: per tool, and for resolvable tools per argument
// variant as tools/resolve answered it, the effect, read-only, destructive,
// idempotent, open world, confirmation and result sensitivity of a call,
// each with where the value came from (a [policy.Source]: resolved,
// static, derived, default).
//
// [FromTarget] builds a [Table] from a [lint.Target] (a live server, probed,
// or a catalog file); [Table.Markdown] writes it for a README and
// [Table.HTML] as one self-contained page (no external assets) with
// colour for risk and filters.
package safety

import (
	"fmt"
	"strings"

	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/policy"
)

// Risk levels, from least to most risky.
const (
	RiskReadOnly    = "read-only"
	RiskWrite       = "write"
	RiskDestructive = "destructive"
)

// A Table is the safety table of one server or catalog.
type Table struct {
	// Title heads the page: the server's name and version, or the source.
	Title string `json:"title"`
	// Source is the URL, command or file the table was made from.
	Source string `json:"source"`
	// Kind is "server" or "catalog".
	Kind string `json:"kind"`
	// Tools are the tools in listed order.
	Tools []*Tool `json:"tools"`
}

// A Tool is one tool's rows.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Resolvable reports a resolvable marker in either shape.
	Resolvable bool `json:"resolvable"`
	// Static is what a client knows from tools/list alone.
	Static Row `json:"static"`
	// Variants are the resolved rows, one per argument variant probed.
	Variants []Row `json:"variants,omitempty"`
	// Notes are remarks: invalid hints, probe coverage, failed variants.
	Notes []string `json:"notes,omitempty"`
}

// A Row is the effective safety values of one call (or of the tool as
// listed).
type Row struct {
	// Variant labels the arguments ("action=delete"); "" for the static row.
	Variant   string         `json:"variant,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	// Risk is RiskReadOnly, RiskWrite or RiskDestructive.
	Risk         string `json:"risk"`
	Effect       Cell   `json:"effect"`
	ReadOnly     Cell   `json:"readOnly"`
	Destructive  Cell   `json:"destructive"`
	Idempotent   Cell   `json:"idempotent"`
	OpenWorld    Cell   `json:"openWorld"`
	Confirmation Cell   `json:"confirmation"`
	Sensitivity  Cell   `json:"resultSensitivity"`
	// Error says why a variant has no resolution (the static values
	// apply); "" when it has one.
	Error string `json:"error,omitempty"`
}

// A Cell is one value and its source.
type Cell struct {
	Value  string        `json:"value"`
	Source policy.Source `json:"source"`
	// Tone colours the value: "good", "warn", "bad" or "".
	Tone string `json:"-"`
}

// Cells returns the row's cells in column order.
func (r Row) Cells() []Cell {
	return []Cell{r.Effect, r.ReadOnly, r.Destructive, r.Idempotent, r.OpenWorld, r.Confirmation, r.Sensitivity}
}

// Columns are the headers of the value columns, in [Row.Cells] order.
var Columns = []string{"effect", "read-only", "destructive", "idempotent", "open world", "confirmation", "result sensitivity"}

// FromTarget builds the table of t.
func FromTarget(t *lint.Target) *Table {
	tb := &Table{Source: t.Source, Kind: t.Kind, Tools: []*Tool{}}
	switch {
	case t.Server != nil && t.Server.Name != "":
		tb.Title = strings.TrimSpace(t.Server.Name + " " + t.Server.Version)
	default:
		tb.Title = t.Source
	}
	for _, lt := range t.Tools {
		tool := &Tool{Name: lt.Name, Title: lt.Title, Description: lt.Description, Resolvable: lt.Resolvable()}
		if tool.Title == "" && lt.Annotations != nil {
			tool.Title = lt.Annotations.Title
		}
		if lt.HintError != nil {
			tool.Notes = append(tool.Notes, "invalid policy hints, ignored: "+strings.Join(strings.Fields(lt.HintError.Error()), " "))
		}
		in := policy.Input{Static: lt.Annotations.MCP(), StaticHints: lt.Hints}
		tool.Static = row(policy.Evaluate(in), lt.Annotations)
		for _, v := range lt.Variants {
			p := v.Resolution()
			if p == nil {
				r := tool.Static
				r.Variant, r.Arguments = label(v), v.Arguments
				r.Error = failure(v)
				tool.Variants = append(tool.Variants, r)
				continue
			}
			vin := in
			vin.Resolved, vin.ResolvedHints = p.Annotations, p.Hints
			r := row(policy.Evaluate(vin), lt.Annotations)
			r.Variant, r.Arguments = label(v), v.Arguments
			tool.Variants = append(tool.Variants, r)
		}
		if c := lt.Coverage; c != nil {
			note := fmt.Sprintf("%d argument variant(s) resolved", c.Variants)
			if len(c.Enumerated) > 0 {
				note += ", enumerating " + strings.Join(c.Enumerated, ", ")
			} else {
				note += " (no argument with enumerable values: placeholders only)"
			}
			if c.Capped {
				note += "; capped: one argument varied at a time"
			}
			tool.Notes = append(tool.Notes, note)
		} else if tool.Resolvable && t.Kind == lint.KindCatalog {
			tool.Notes = append(tool.Notes, "marked resolvable; a catalog cannot be resolved: run docs against the running server for per-variant rows")
		}
		tb.Tools = append(tb.Tools, tool)
	}
	return tb
}

func label(v *lint.Variant) string {
	if v.Label != "" {
		return v.Label
	}
	return "(placeholder arguments)"
}

func failure(v *lint.Variant) string {
	for _, p := range v.Probes {
		switch {
		case p.Err != "":
			return "resolution failed: " + strings.Join(strings.Fields(p.Err), " ")
		case p.Malformed != "":
			return "malformed resolution: " + p.Malformed
		}
	}
	return "not resolved"
}

// row turns effective values into a row. The annotations as listed tell
// an absent readOnlyHint or idempotentHint (the protocol's default) from
// a declared one, which policy, reading the SDK's type, cannot.
func row(e policy.Effective, a *lint.Annotations) Row {
	readOnly, idem := e.ReadOnly, e.Idempotent
	if readOnly.Source == policy.SourceStatic && (a == nil || a.ReadOnlyHint == nil) {
		readOnly.Source = policy.SourceDefault
	}
	if idem.Source == policy.SourceStatic && (a == nil || a.IdempotentHint == nil) {
		idem.Source = policy.SourceDefault
	}
	r := Row{
		Effect:       Cell{Value: string(e.Effect.Value), Source: e.Effect.Source},
		ReadOnly:     boolCell(readOnly),
		Destructive:  boolCell(e.Destructive),
		Idempotent:   boolCell(e.IdempotentCall),
		OpenWorld:    boolCell(e.OpenWorld),
		Confirmation: Cell{Value: yesNo(e.RequiresConfirmation.Value, "required", "not required"), Source: e.RequiresConfirmation.Source},
		Sensitivity:  Cell{Value: string(e.ResultSensitivity.Value), Source: e.ResultSensitivity.Source},
	}
	if r.Sensitivity.Value == "" {
		r.Sensitivity.Value = "unknown"
	}
	// A read-only call destroys nothing whatever destructiveHint says
	// (the hint is meaningful only when not read-only).
	if e.ReadOnly.Value {
		r.Destructive = Cell{Value: "no", Source: readOnly.Source}
	}
	setTones(&r)
	switch {
	case e.ReadOnly.Value:
		r.Risk = RiskReadOnly
	case e.Destructive.Value || e.Effect.Value == hints.EffectDelete:
		r.Risk = RiskDestructive
	default:
		r.Risk = RiskWrite
	}
	return r
}

func boolCell(v policy.Value[bool]) Cell {
	return Cell{Value: yesNo(v.Value, "yes", "no"), Source: v.Source}
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// Counts summarises a table: tools, and tools whose static row is
// read-only, write or destructive, and that need confirmation.
type Counts struct {
	Tools, ReadOnly, Write, Destructive, Confirm, Resolvable, Variants int
}

// Counts counts t's tools by their static row.
func (t *Table) Counts() Counts {
	var c Counts
	for _, tool := range t.Tools {
		c.Tools++
		switch tool.Static.Risk {
		case RiskReadOnly:
			c.ReadOnly++
		case RiskWrite:
			c.Write++
		case RiskDestructive:
			c.Destructive++
		}
		if tool.Static.Confirmation.Value == "required" {
			c.Confirm++
		}
		if tool.Resolvable {
			c.Resolvable++
		}
		c.Variants += len(tool.Variants)
	}
	return c
}

// Legend explains the sources.
var Legend = []struct {
	Source policy.Source
	Means  string
}{
	{policy.SourceResolved, "the server's tools/resolve answer for these arguments"},
	{policy.SourceStatic, "the tool's definition in tools/list"},
	{policy.SourceDerived, "not given: derived from the annotations (seed 002 hints)"},
	{policy.SourceDefault, "not given: the protocol's default (the most conservative value)"},
	{policy.SourceOverride, "a deployer's override"},
}

// setTones colours the values that matter at a glance.
func setTones(r *Row) {
	tone := func(c *Cell, m map[string]string) { c.Tone = m[c.Value] }
	tone(&r.Effect, map[string]string{"read": "good", "write": "warn", "external": "warn", "delete": "bad"})
	tone(&r.ReadOnly, map[string]string{"yes": "good"})
	tone(&r.Destructive, map[string]string{"yes": "bad"})
	tone(&r.Idempotent, map[string]string{"yes": "good"})
	tone(&r.OpenWorld, map[string]string{"yes": "warn"})
	tone(&r.Confirmation, map[string]string{"required": "bad"})
	tone(&r.Sensitivity, map[string]string{"public": "good", "internal": "warn", "confidential": "bad", "restricted": "bad"})
}
