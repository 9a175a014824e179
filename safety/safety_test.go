package safety

import (
	"bytes"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/policy"
)

const catalog = `{"server": {"name": "notes", "version": "2"}, "tools": [
  {"name": "read_note", "description": "Reads a note.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}, "_meta": {"mcp.dev/resultSensitivity": "confidential"}},
  {"name": "append_note", "description": "Appends to a note.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false}},
  {"name": "manage_notes", "description": "Reads or deletes notes <b>safely</b>.", "inputSchema": {"type": "object"},
   "annotations": {"destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
   "_meta": {"mcp.dev/effect": "delete", "mcp.dev/requiresConfirmation": true}, "resolve": true}
]}`

// target is the catalog with manage_notes resolved for two variants, as
// lint.Observe would have left it.
func target(t *testing.T) *lint.Target {
	t.Helper()
	tg, err := lint.ParseCatalog([]byte(catalog))
	if err != nil {
		t.Fatal(err)
	}
	tg.Kind, tg.Source = lint.KindServer, "http://127.0.0.1/mcp"
	m := tg.Tools[2]
	m.Coverage = &lint.Coverage{Enumerated: []string{"action"}, Variants: 2}
	read := preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}
	del := preflight.Annotations{DestructiveHint: true, IdempotentHint: true}
	m.Variants = []*lint.Variant{
		{Arguments: map[string]any{"action": "read"}, Label: "action=read", Probes: []*lint.Probe{{Shape: lint.ShapeExtension, Annotations: &read, Hints: hints.Hints{Effect: hints.EffectRead, RequiresConfirmation: hints.Bool(false)}}}},
		{Arguments: map[string]any{"action": "delete"}, Label: "action=delete", Probes: []*lint.Probe{{Shape: lint.ShapeExtension, Annotations: &del}}},
		{Arguments: map[string]any{"action": "purge"}, Label: "action=purge", Probes: []*lint.Probe{{Shape: lint.ShapeExtension, Code: -32603, Err: "could not resolve"}}},
	}
	return tg
}

func TestFromTarget(t *testing.T) {
	tb := FromTarget(target(t))
	if tb.Title != "notes 2" || len(tb.Tools) != 3 {
		t.Fatalf("table = %+v", tb)
	}
	read := tb.Tools[0].Static
	if read.Risk != RiskReadOnly || read.ReadOnly != (Cell{"yes", policy.SourceStatic, "good"}) ||
		read.Sensitivity.Value != "confidential" || read.Sensitivity.Source != policy.SourceStatic ||
		read.Idempotent.Source != policy.SourceDerived || read.Destructive.Value != "no" {
		t.Errorf("read_note = %+v", read)
	}
	appendRow := tb.Tools[1].Static
	if appendRow.Risk != RiskWrite || appendRow.Confirmation.Value != "not required" || appendRow.Confirmation.Source != policy.SourceDerived {
		t.Errorf("append_note = %+v", appendRow)
	}
	m := tb.Tools[2]
	if !m.Resolvable || m.Static.Risk != RiskDestructive || m.Static.ReadOnly.Source != policy.SourceDefault ||
		m.Static.Confirmation != (Cell{"required", policy.SourceStatic, "bad"}) || len(m.Variants) != 3 {
		t.Fatalf("manage_notes = %+v", m)
	}
	if v := m.Variants[0]; v.Risk != RiskReadOnly || v.Effect != (Cell{"read", policy.SourceResolved, "good"}) || v.Confirmation.Source != policy.SourceResolved {
		t.Errorf("action=read = %+v", v)
	}
	// delete: the resolution gives no hints, so they are derived from its
	// annotations, never taken from the static worst case.
	if v := m.Variants[1]; v.Risk != RiskDestructive || v.Effect != (Cell{"write", policy.SourceDerived, "warn"}) ||
		v.Confirmation != (Cell{"required", policy.SourceDerived, "bad"}) || v.Destructive.Source != policy.SourceResolved {
		t.Errorf("action=delete = %+v", v)
	}
	if v := m.Variants[2]; v.Error == "" || v.Risk != RiskDestructive {
		t.Errorf("action=purge = %+v", v)
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := FromTarget(target(t)).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# Safety table: notes 2",
		"3 tools: 1 read-only, 1 write, 1 destructive; 1 need confirmation as listed. 1 resolvable, 3 argument variants resolved.",
		"| tool | arguments | risk | effect | read-only | destructive | idempotent | open world | confirmation | result sensitivity |",
		"| **read_note** | *any (as listed)* | 🟢 read-only | read <sub>derived</sub> | yes <sub>static</sub> |",
		"|  | `action=read` | 🟢 read-only | read <sub>resolved</sub> |",
		"`action=purge` (resolution failed: could not resolve; static values)",
		"- **manage_notes**: 2 argument variant(s) resolved, enumerating action",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
}
