package pack

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// row is the confirmation count of one catalog.
type row struct {
	label          string
	tools, calls   int
	static, after  int // calls that need confirmation with static annotations, resolved
	bySwitch       int // confirmations removed on tools whose behaviour switches on an argument
	byTool         int // confirmations removed by a rule for the whole tool
	added          int // calls confirmed only after resolution
	destructive    int // resolved calls that are destructive or delete
	unconfirmedBad []string
	changed        []string // tool variant: static -> resolved
}

// nameSaysDestructive: a tool name or switch value that says the call
// removes something. The pack must never leave such a call unconfirmed
// when its static declaration asked for confirmation.
var nameSaysDestructive = regexp.MustCompile(`(^|[_\-. =])(delete|remove|cancel|clear|destroy|purge|drop|reset|overwrite)`)

// measure makes every variant call of every tool of c, with the pack of
// its server, and counts confirmations with the static declaration and
// with the resolution.
func measure(t testing.TB, c catalog) row {
	t.Helper()
	p, err := Get(c.pack)
	if err != nil {
		t.Fatal(err)
	}
	tools := readCatalog(t, c.file, c.prefix)
	r := compileFor(t, c.pack, tools)
	out := row{label: c.label(), tools: len(tools)}
	for _, tool := range tools {
		static := staticDecision(tool)
		for _, v := range variants(t, p, tool) {
			out.calls++
			res := resolveArgs(t, r, tool, v.args)
			after := res.NeedsConfirmation()
			e := res.Effective
			destructive := !e.ReadOnly.Value && e.Destructive.Value || e.Effect.Value == hints.EffectDelete
			name := tool.Name
			if v.label != "" {
				name += " " + v.label
			}
			if destructive {
				out.destructive++
				if !after {
					out.unconfirmedBad = append(out.unconfirmedBad, name+" (resolved destructive)")
				}
			}
			if static && !after && nameSaysDestructive.MatchString(strings.ToLower(tool.Name+" "+switchWord(v))) {
				out.unconfirmedBad = append(out.unconfirmedBad, name+" (its name says it removes something)")
			}
			if static {
				out.static++
			}
			if after {
				out.after++
			}
			switch {
			case static && !after && p.Switch(tool.Name) != "":
				out.bySwitch++
			case static && !after:
				out.byTool++
			case !static && after:
				out.added++
			}
			if static != after {
				out.changed = append(out.changed, fmt.Sprintf("%s: %s -> %s (%s)", name, yesNo(static), yesNo(after), res.Rule))
			}
		}
	}
	return out
}

// switchWord is what a variant says about itself: a string switch value,
// or the name of a boolean switch that is on.
func switchWord(v variant) string {
	name, value, ok := strings.Cut(v.label, "=")
	if !ok {
		return ""
	}
	switch value {
	case "true":
		return name
	case "false":
		return ""
	}
	return value
}

// staticDecision is what a client decides from tools/list alone.
func staticDecision(tool *mcp.Tool) bool {
	h, _ := hints.Read(tool.Meta)
	return policy.Evaluate(policy.Input{Static: tool.Annotations, StaticHints: h}).NeedsConfirmation()
}

func yesNo(b bool) string {
	if b {
		return "confirm"
	}
	return "no"
}

func pct(before, after int) string {
	if before == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(before-after)/float64(before))
}

func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| catalog | tools | calls | confirm, static | confirm, resolved | fewer | removed by argument | removed per tool | added | destructive calls, all confirmed |")
	fmt.Fprintln(w, "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %d | %d | %d | %d |\n",
			r.label, r.tools, r.calls, r.static, r.after, pct(r.static, r.after), r.bySwitch, r.byTool, r.added, r.destructive)
	}
}

func total(label string, rows []row) row {
	t := row{label: label}
	for _, r := range rows {
		t.tools += r.tools
		t.calls += r.calls
		t.static += r.static
		t.after += r.after
		t.bySwitch += r.bySwitch
		t.byTool += r.byTool
		t.added += r.added
		t.destructive += r.destructive
		t.unconfirmedBad = append(t.unconfirmedBad, r.unconfirmedBad...)
	}
	return t
}

// TestConfirmationTable measures, on the real catalogs, how many calls
// need confirmation with the servers' static annotations and with the
// gateway's resolution (pack rules; the upstreams do not serve
// tools/resolve), for a uniform mix of each tool's argument variants: one
// call per value of the switching argument, one call for a tool without
// one. Run with -v to print the table of docs/gateway-rules.md; with
// PREFLIGHT_TABLE_DETAIL=1 it also lists every call whose decision
// changed.
func TestConfirmationTable(t *testing.T) {
	t.Parallel()
	var annotated, bare []row
	for _, c := range catalogs {
		r := measure(t, c)
		if c.annotated {
			annotated = append(annotated, r)
		} else {
			bare = append(bare, r)
		}
	}
	main := total("**all annotated catalogs**", annotated)
	distinct := total("without github-default (a subset of github-all)", annotated[:1])
	for _, r := range annotated[2:] {
		distinct = total(distinct.label, []row{distinct, r})
	}
	noAnn := total("**both**", bare)
	if testing.Verbose() {
		w := os.Stdout
		fmt.Fprintln(w, "\nCatalogs with the servers' own annotations:")
		fmt.Fprintln(w)
		writeTable(w, append(append(annotated, main), distinct))
		fmt.Fprintln(w, "\nCatalogs captured without annotations (every call starts from the protocol's defaults):")
		fmt.Fprintln(w)
		writeTable(w, append(bare, noAnn))
		if os.Getenv("PREFLIGHT_TABLE_DETAIL") != "" {
			for _, r := range append(annotated, bare...) {
				fmt.Fprintf(w, "\n%s:\n", r.label)
				for _, c := range r.changed {
					fmt.Fprintln(w, "  "+c)
				}
			}
		}
	}
	for _, r := range []row{main, noAnn} {
		for _, bad := range r.unconfirmedBad {
			t.Errorf("destructive call left unconfirmed: %s", bad)
		}
		if r.destructive == 0 {
			t.Errorf("%s: no destructive call at all; the measurement is broken", r.label)
		}
	}
	// Issue 9's goal is at least 70% fewer confirmations. The pack
	// reaches 67% on the annotated catalogs: every call still confirmed
	// deletes something, overwrites what the service keeps no history of,
	// or starts what the gateway cannot bound (docs/gateway-rules.md lists
	// them). This floor keeps it from getting worse.
	const floor = 0.65
	if got := float64(main.static-main.after) / float64(main.static); got < floor {
		t.Errorf("%s: %d -> %d confirmations, %.1f%% fewer; want at least %.0f%% (goal: 70%%)", main.label, main.static, main.after, 100*got, 100*floor)
	}
}
