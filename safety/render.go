package safety

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/preflightmcp/preflight/policy"
)

// riskMark is the Markdown marker of a risk level.
var riskMark = map[string]string{
	RiskReadOnly:    "🟢 read-only",
	RiskWrite:       "🟠 write",
	RiskDestructive: "🔴 destructive",
}

// Markdown writes the table as GitHub-flavoured Markdown: a heading, a
// summary line, one table with a row per tool as listed and a row per
// resolved variant beneath it, then the notes and the legend of sources.
func (t *Table) Markdown(w io.Writer) error {
	var b strings.Builder
	c := t.Counts()
	fmt.Fprintf(&b, "# Safety table: %s\n\n", mdEscape(t.Title))
	fmt.Fprintf(&b, "Made by `preflight docs` from the %s `%s`. %s\n\n", t.Kind, strings.ReplaceAll(t.Source, "`", "'"), summary(c))
	b.WriteString("| tool | arguments | risk |")
	for _, col := range Columns {
		b.WriteString(" " + col + " |")
	}
	b.WriteString("\n|---|---|---|")
	for range Columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	writeRow := func(name, variant string, r Row) {
		fmt.Fprintf(&b, "| %s | %s | %s |", name, variant, riskMark[r.Risk])
		for _, cell := range r.Cells() {
			fmt.Fprintf(&b, " %s <sub>%s</sub> |", mdEscape(cell.Value), cell.Source)
		}
		b.WriteString("\n")
	}
	for _, tool := range t.Tools {
		writeRow("**"+mdEscape(tool.Name)+"**", "*any (as listed)*", tool.Static)
		for _, v := range tool.Variants {
			variant := "`" + strings.ReplaceAll(v.Variant, "`", "'") + "`"
			if v.Error != "" {
				variant += " (" + mdEscape(v.Error) + "; static values)"
			}
			writeRow("", mdEscape(variant), v)
		}
	}
	var notes []string
	for _, tool := range t.Tools {
		for _, n := range tool.Notes {
			notes = append(notes, fmt.Sprintf("- **%s**: %s", mdEscape(tool.Name), mdEscape(n)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	b.WriteString("\nWhere each value came from:")
	for _, l := range Legend {
		if l.Source == policy.SourceOverride {
			continue
		}
		fmt.Fprintf(&b, " *%s*: %s;", l.Source, l.Means)
	}
	s := strings.TrimSuffix(b.String(), ";") + ".\n"
	_, err := io.WriteString(w, s)
	return err
}

func summary(c Counts) string {
	tools := "tools"
	if c.Tools == 1 {
		tools = "tool"
	}
	s := fmt.Sprintf("%d %s: %d read-only, %d write, %d destructive; %d need confirmation as listed.",
		c.Tools, tools, c.ReadOnly, c.Write, c.Destructive, c.Confirm)
	if c.Resolvable > 0 {
		s += fmt.Sprintf(" %d resolvable, %d argument variants resolved.", c.Resolvable, c.Variants)
	}
	return s
}

// mdEscape keeps a value from breaking a Markdown table cell.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "\r", "", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"effects": func(t *Tool) string {
		var out []string
		for _, r := range append([]Row{t.Static}, t.Variants...) {
			if !slices.Contains(out, r.Effect.Value) {
				out = append(out, r.Effect.Value)
			}
		}
		return strings.Join(out, " ")
	},
	"columns": func() []string { return Columns },
	"rowOf": func(r Row, kind string) any {
		if kind == "" {
			kind = "static"
		}
		return struct {
			Row  Row
			Kind string
		}{r, kind}
	},
	"summary": summary,
	"legend":  func() any { return Legend },
}).Parse(pageHTML))

// HTML writes the table as one self-contained HTML page: styles and script
// inline, no external assets. Rows are coloured by risk; filters (text,
// risk, confirmation, effect, resolved variants) run in the page, and the
// URL fragment holds them (#risk=destructive&confirm=1), so a filtered
// view can be linked.
func (t *Table) HTML(w io.Writer) error {
	return page.Execute(w, struct {
		*Table
		Counts Counts
	}{t, t.Counts()})
}
