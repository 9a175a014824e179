package lint

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// A Report is the outcome of one lint run.
type Report struct {
	// Target is what was checked.
	Target *Target `json:"-"`
	// Findings are the findings no configuration entry silenced, in tool
	// order (server-level ones first), then check order.
	Findings []Finding `json:"findings"`
	// Suppressed are the findings an ignore entry silenced, with its
	// reason in Finding.Suppressed.
	Suppressed []Finding `json:"suppressed"`
	// UnusedIgnores are configuration entries that silenced nothing.
	UnusedIgnores []Ignore `json:"unusedIgnores,omitempty"`
}

// Count returns the number of unsuppressed findings at or above min.
func (r *Report) Count(min Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= min {
			n++
		}
	}
	return n
}

// Run checks t and applies cfg's ignore entries (cfg may be nil).
func Run(t *Target, cfg *Config) *Report {
	all := Findings(t)
	r := &Report{Target: t, Findings: []Finding{}, Suppressed: []Finding{}}
	used := make([]bool, 0)
	if cfg != nil {
		used = make([]bool, len(cfg.Ignore))
	}
	for _, f := range all {
		if cfg != nil {
			if i := cfg.match(f); i >= 0 {
				used[i] = true
				f.Suppressed = cfg.Ignore[i].Reason
				r.Suppressed = append(r.Suppressed, f)
				continue
			}
		}
		r.Findings = append(r.Findings, f)
	}
	for i, u := range used {
		if !u {
			r.UnusedIgnores = append(r.UnusedIgnores, cfg.Ignore[i])
		}
	}
	return r
}

// Findings returns every finding of every check on t.
func Findings(t *Target) []Finding {
	var out []Finding
	out = append(out, serverFindings(t)...)
	seen := map[string]int{}
	for _, tool := range t.Tools {
		seen[tool.Name]++
	}
	for _, tool := range t.Tools {
		fs := toolFindings(t, tool, seen[tool.Name])
		slices.SortStableFunc(fs, func(a, b Finding) int { return checkIndex(a.Check) - checkIndex(b.Check) })
		out = append(out, fs...)
	}
	return out
}

// serverFindings are the checks of the server as a whole: markers and
// capabilities, and the unknown-tool probe.
func serverFindings(t *Target) []Finding {
	if t.Kind != KindServer || t.Capabilities == nil {
		return nil
	}
	var out []Finding
	var extMarked, seedMarked []string
	for _, tool := range t.Tools {
		if tool.ExtensionMarker {
			extMarked = append(extMarked, tool.Name)
		}
		if tool.SeedMarker {
			seedMarked = append(seedMarked, tool.Name)
		}
	}
	c := t.Capabilities
	if len(extMarked) > 0 && !c.Extension {
		out = append(out, newFinding(CheckCapabilityMissing, nil,
			"%s carry the _meta marker %s but the server does not declare capabilities.extensions[%q]",
			toolList(extMarked), preflight.ExtensionToolResolution, preflight.ExtensionToolResolution))
	}
	if len(seedMarked) > 0 && !c.Seed {
		out = append(out, newFinding(CheckCapabilityMissing, nil,
			`%s carry the seed's top-level "resolve": true but the server does not declare capabilities.tools.resolve`,
			toolList(seedMarked)))
	}
	if c.Extension && len(extMarked) == 0 {
		out = append(out, newFinding(CheckMarkerMissing, nil,
			"the server declares the %s extension but no tool carries the _meta marker {\"resolvable\": true}", preflight.ExtensionToolResolution))
	}
	if c.Seed && len(seedMarked) == 0 {
		out = append(out, newFinding(CheckMarkerMissing, nil,
			`the server declares capabilities.tools.resolve but no tool carries the seed's top-level "resolve": true`))
	}
	if p := t.Unknown; p != nil {
		switch {
		case p.Err == "" && p.Raw != nil:
			out = append(out, newFinding(CheckAcceptsInvalid, nil,
				"tools/resolve for a tool that does not exist (%q) was answered with a result", unknownTool).about(p.Arguments, p.Shape))
		case p.Code != 0 && p.Code != preflight.CodeInvalidParams && p.Code != preflight.CodeMethodNotFound:
			out = append(out, newFinding(CheckInvalidCode, nil,
				"tools/resolve for a tool that does not exist (%q) was refused with error %d, want -32602", unknownTool, p.Code).about(p.Arguments, p.Shape))
		}
	}
	return out
}

func toolList(names []string) string {
	if len(names) == 1 {
		return "tool " + names[0]
	}
	if len(names) > 5 {
		return fmt.Sprintf("tools %s and %d more", strings.Join(names[:5], ", "), len(names)-5)
	}
	return "tools " + strings.Join(names, ", ")
}

func toolFindings(t *Target, tool *Tool, count int) []Finding {
	var out []Finding
	add := func(id, format string, args ...any) {
		out = append(out, newFinding(id, tool, format, args...))
	}

	// Name, description, input schema.
	if problem := nameProblem(tool.Name); problem != "" {
		add(CheckToolName, "%s", problem)
	}
	if count > 1 {
		add(CheckToolName, "the name %q is listed %d times", tool.Name, count)
	}
	if strings.TrimSpace(tool.Description) == "" {
		add(CheckDescriptionMissing, "no description")
	}
	switch s := tool.InputSchema.(type) {
	case nil:
		add(CheckInputSchemaObject, "no inputSchema")
	case map[string]any:
		if s["type"] != "object" {
			add(CheckInputSchemaObject, "inputSchema has type %s, want \"object\"", valueOrAbsent(s["type"]))
		}
	default:
		add(CheckInputSchemaObject, "inputSchema is %s, not a JSON Schema object", valueOrAbsent(s))
	}

	// Static annotations and hints.
	static := tool.Annotations.Effective()
	switch {
	case tool.Annotations.Empty():
		what := "no annotations"
		if tool.Annotations != nil {
			what = "annotations without any of the four hints"
		}
		add(CheckNoAnnotations, "%s: clients assume destructive, not idempotent, open world", what)
	case tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint:
		if tool.Annotations.DestructiveHint == nil {
			add(CheckDestructiveImplicit, "not read-only and destructiveHint unset: destructive only by default")
		}
	}
	if tool.HintError != nil {
		add(CheckHintInvalid, "%s", oneLine(tool.HintError.Error()))
	}
	for _, c := range hints.Contradictions(static, tool.Hints) {
		add(CheckHintContradiction, "%s", c)
	}
	explicitDestructive := !static.ReadOnlyHint && tool.Annotations != nil && tool.Annotations.DestructiveHint != nil && *tool.Annotations.DestructiveHint
	if (explicitDestructive || !static.ReadOnlyHint && tool.Hints.Effect == hints.EffectDelete) && !confirmed(tool.Hints) {
		why := "declared destructive"
		if !explicitDestructive {
			why = `effect "delete"`
		}
		add(CheckDestructiveUnconfirmed, "%s but %s", why, confirmationText(tool.Hints))
	}
	verb := leadingVerb(tool.Name)
	switch {
	case static.ReadOnlyHint && writeVerbs[verb]:
		add(CheckReadOnlyWriteName, "named %q (%s) but declared readOnlyHint: true", tool.Name, verb)
	case !static.ReadOnlyHint && readVerbs[verb]:
		add(CheckReadNameNotReadOnly, "named %q (%s) but not declared read-only", tool.Name, verb)
	}

	if t.Kind == KindServer {
		out = append(out, resolutionFindings(tool, static)...)
	}
	return out
}

// resolutionFindings are the checks of a resolvable tool's probes.
func resolutionFindings(tool *Tool, static preflight.Annotations) []Finding {
	var out []Finding
	// One finding per check and message: the same defect in many variants
	// is reported once, naming the first variant.
	seen := map[string]bool{}
	add := func(id string, p *Probe, format string, args ...any) {
		f := newFinding(id, tool, format, args...).about(p.Arguments, p.Shape)
		key := id + "\x00" + p.Shape + "\x00" + f.Message
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, f)
	}
	var resolved []preflight.Annotations
	var effects []hints.Effect
	for _, v := range tool.Variants {
		for _, p := range v.Probes {
			switch {
			case p.Code == preflight.CodeMethodNotFound:
				add(CheckCapabilityMissing, p, "marked resolvable (%s shape) but tools/resolve answered -32601 (method not found)", p.Shape)
				continue
			case p.Code == preflight.CodeInvalidParams:
				add(CheckResolveFailed, p, "refused arguments that are valid against the input schema with -32602: %s", oneLine(p.Err))
				continue
			case p.Err != "":
				add(CheckResolveFailed, p, "tools/resolve failed for valid arguments: %s", oneLine(p.Err))
				continue
			case p.Malformed != "":
				add(CheckResolveMalformed, p, "%s", p.Malformed)
				continue
			}
			a := *p.Annotations
			resolved = append(resolved, a)
			effects = append(effects, p.Hints.Effect)
			label := variantText(v)
			if p.HintError != nil {
				add(CheckHintInvalid, p, "resolution for %s: %s", label, oneLine(p.HintError.Error()))
			}
			for _, c := range hints.Contradictions(a, p.Hints) {
				add(CheckHintContradiction, p, "resolution for %s: %s", label, c)
			}
			if over := exceeds(a, p.Hints, static, tool.Hints); len(over) > 0 {
				add(CheckResolveBounds, p, "resolution for %s is riskier than tools/list in %s (static %s, resolved %s)",
					label, strings.Join(over, ", "), annText(&static), annText(&a))
			}
			e := policy.Evaluate(policy.Input{Static: tool.Annotations.MCP(), StaticHints: tool.Hints, Resolved: &a, ResolvedHints: p.Hints})
			if !a.ReadOnlyHint && a.DestructiveHint && !(e.RequiresConfirmation.Value && e.RequiresConfirmation.Source != policy.SourceDerived) {
				add(CheckDestructiveUnconfirmed, p, "resolves destructive for %s but %s", label, confirmationText(p.Hints))
			}
			if p.Again != "" {
				add(CheckNondeterministic, p, "the same request for %s twice: %s", label, p.Again)
			}
		}
	}
	for _, p := range tool.Invalid {
		switch {
		case p.Err == "" && p.Raw != nil:
			add(CheckAcceptsInvalid, p, "answered with a resolution for invalid arguments (%s)", p.Kind)
		case p.Code != 0 && p.Code != preflight.CodeInvalidParams:
			add(CheckInvalidCode, p, "refused invalid arguments (%s) with error %d, want -32602", p.Kind, p.Code)
		}
	}
	if len(resolved) > 0 && !hasCheck(out, CheckResolveBounds) {
		worst := preflight.WorstCase(resolved...)
		var looser []string
		if static.ReadOnlyHint != worst.ReadOnlyHint {
			looser = append(looser, "readOnlyHint")
		}
		if !static.ReadOnlyHint && static.DestructiveHint && !worst.DestructiveHint {
			looser = append(looser, "destructiveHint")
		}
		if !static.ReadOnlyHint && !static.IdempotentHint && worst.IdempotentHint && !worst.ReadOnlyHint {
			looser = append(looser, "idempotentHint")
		}
		if static.OpenWorldHint && !worst.OpenWorldHint {
			looser = append(looser, "openWorldHint")
		}
		if s := tool.Hints.Effect; s != "" && !slices.Contains(effects, "") {
			top := hints.EffectRead
			for _, e := range effects {
				if e.Rank() > top.Rank() {
					top = e
				}
			}
			if s.Rank() > top.Rank() {
				looser = append(looser, fmt.Sprintf("%s (static %q, at most %q resolved)", preflight.MetaEffect, s, top))
			}
		}
		if len(looser) > 0 {
			n := len(resolved)
			f := newFinding(CheckNotWorstCase, tool, "static %s is more conservative than every one of the %d resolutions probed (worst case %s) in %s",
				annText(&static), n, annText(&worst), strings.Join(looser, ", "))
			out = append(out, f)
		}
	}
	return out
}

// exceeds lists where a resolution is riskier than the static declaration
// (hints.Exceeds), in words.
func exceeds(a preflight.Annotations, h hints.Hints, static preflight.Annotations, sh hints.Hints) []string {
	var out []string
	for _, x := range hints.Exceeds(hints.Declaration{Annotations: static, Hints: sh}, hints.Declaration{Annotations: a, Hints: h}) {
		out = append(out, x.String())
	}
	return out
}

func hasCheck(fs []Finding, id string) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == id })
}

func confirmed(h hints.Hints) bool { return h.RequiresConfirmation != nil && *h.RequiresConfirmation }

func confirmationText(h hints.Hints) string {
	if h.RequiresConfirmation == nil {
		return preflight.MetaRequiresConfirmation + " is not set"
	}
	return preflight.MetaRequiresConfirmation + " is false"
}

func variantText(v *Variant) string {
	if v.Label != "" {
		return v.Label
	}
	return argsText(v.Arguments)
}

func valueOrAbsent(v any) string {
	if v == nil {
		return "(absent)"
	}
	return valueText(v)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// nameProblem says what is wrong with a tool name by the spec's rules
// (2025-11-25: 1 to 128 characters from A-Z, a-z, 0-9, _, - and .), "" if
// nothing.
func nameProblem(name string) string {
	if name == "" {
		return "the tool has no name"
	}
	var bad []string
	for _, r := range name {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_' || r == '-' || r == '.') {
			q := fmt.Sprintf("%q", string(r))
			if !slices.Contains(bad, q) {
				bad = append(bad, q)
			}
		}
	}
	switch {
	case len(name) > 128 && len(bad) > 0:
		return fmt.Sprintf("the name is %d bytes long (at most 128) and contains %s", len(name), strings.Join(bad, ", "))
	case len(name) > 128:
		return fmt.Sprintf("the name is %d bytes long (at most 128)", len(name))
	case len(bad) > 0:
		return fmt.Sprintf("the name %q contains %s (allowed: A-Z a-z 0-9 _ - .)", name, strings.Join(bad, ", "))
	}
	return ""
}

// Verbs that name what a tool does, by its leading word.
var (
	readVerbs = setOf("get", "list", "read", "search", "find", "fetch", "query", "describe", "show", "view",
		"lookup", "count", "browse", "retrieve", "download", "inspect", "explain", "check", "validate", "preview", "summarize", "summarise")
	writeVerbs = setOf("delete", "remove", "create", "write", "update", "set", "add", "put", "post", "send", "drop",
		"destroy", "purge", "erase", "move", "rename", "edit", "modify", "insert", "upload", "merge", "archive", "push",
		"apply", "patch", "replace", "append", "clear", "reset", "kill", "terminate", "publish", "deploy", "install", "uninstall")
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// leadingVerb is the first word of a tool's name, lower case, after any
// "server__" prefix: "get" for get_me, getUser and github__get-issue.
func leadingVerb(name string) string {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	}
	if i := strings.LastIndexAny(name, "./"); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for i, r := range name {
		if r == '_' || r == '-' || r == ' ' || i > 0 && unicode.IsUpper(r) {
			break
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
