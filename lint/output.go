package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// Summary describes the target of a report in one line.
func (r *Report) Summary() string {
	t := r.Target
	name := "(unnamed)"
	if t.Server != nil && t.Server.Name != "" {
		name = oneLine(t.Server.Name + " " + t.Server.Version)
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%s %s (%s)", t.Kind, name, oneLine(t.Source)))
	if t.ProtocolVersion != "" {
		parts = append(parts, "protocol "+t.ProtocolVersion)
	}
	parts = append(parts, plural(len(t.Tools), "tool"))
	resolvable, variants := 0, 0
	for _, tool := range t.Tools {
		if tool.Resolvable() {
			resolvable++
		}
		variants += len(tool.Variants)
	}
	if t.Kind == KindServer {
		parts = append(parts, fmt.Sprintf("%d resolvable, %s probed", resolvable, plural(variants, "argument variant")))
	} else if resolvable > 0 {
		parts = append(parts, fmt.Sprintf("%d marked resolvable (not probed: a catalog)", resolvable))
	}
	if t.Descriptions != "" {
		parts = append(parts, "full definitions read from "+t.Descriptions)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// WriteText writes the report for people: one block per finding, then a
// count, failing at min.
func (r *Report) WriteText(w io.Writer, min Severity) error {
	var b strings.Builder
	fmt.Fprintf(&b, "preflight lint: %s\n", r.Summary())
	for _, n := range r.Target.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString("\n")
	for _, f := range r.Findings {
		loc := ""
		if f.Line > 0 && r.Target.Kind == KindCatalog {
			loc = fmt.Sprintf("%s:%d: ", r.Target.Source, f.Line)
		}
		tool := oneLine(f.Tool) // a server's tool name: one line, whatever it holds
		if tool == "" {
			tool = "(server)"
		}
		fmt.Fprintf(&b, "%s%s: %s %s: %s\n", loc, tool, f.Severity, f.Check, oneLine(f.Message))
		if f.Arguments != nil {
			fmt.Fprintf(&b, "  request: tools/resolve %s, %s shape\n", argsText(f.Arguments), f.Shape)
		}
		fmt.Fprintf(&b, "  fix: %s\n", f.Fix)
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n")
	}
	for _, ig := range r.UnusedIgnores {
		fmt.Fprintf(&b, "note: the ignore entry for %s on %q silenced nothing\n", ig.Check, ig.Tool)
	}
	counts := map[Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	fmt.Fprintf(&b, "findings: %d error, %d warning, %d info", counts[Error], counts[Warning], counts[Info])
	if n := len(r.Suppressed); n > 0 {
		fmt.Fprintf(&b, " (%d suppressed by the configuration)", n)
	}
	if n := r.Count(min); n > 0 {
		fmt.Fprintf(&b, "; %d at or above %s: failing\n", n, min)
	} else {
		fmt.Fprintf(&b, "; none at or above %s: passing\n", min)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonReport is the JSON output.
type jsonReport struct {
	Target struct {
		Kind            string          `json:"kind"`
		Source          string          `json:"source"`
		Server          any             `json:"server,omitempty"`
		ProtocolVersion string          `json:"protocolVersion,omitempty"`
		Capabilities    *Capabilities   `json:"capabilities,omitempty"`
		Tools           int             `json:"tools"`
		Resolvable      []jsonResolvble `json:"resolvable"`
		Descriptions    string          `json:"descriptions,omitempty"`
		Notes           []string        `json:"notes,omitempty"`
	} `json:"target"`
	FailOn     Severity       `json:"failOn"`
	Failed     bool           `json:"failed"`
	Counts     map[string]int `json:"counts"`
	Findings   []Finding      `json:"findings"`
	Suppressed []Finding      `json:"suppressed"`
	Unused     []Ignore       `json:"unusedIgnores,omitempty"`
	Checks     []Check        `json:"checks"`
}

type jsonResolvble struct {
	Tool     string    `json:"tool"`
	Coverage *Coverage `json:"coverage,omitempty"`
}

// WriteJSON writes the report as one JSON document: the target, the
// findings (and the suppressed ones), counts by severity, whether the run
// fails at min, and the checks.
func (r *Report) WriteJSON(w io.Writer, min Severity) error {
	var doc jsonReport
	t := r.Target
	doc.Target.Kind, doc.Target.Source, doc.Target.ProtocolVersion = t.Kind, t.Source, t.ProtocolVersion
	if t.Server != nil {
		doc.Target.Server = map[string]string{"name": t.Server.Name, "version": t.Server.Version}
	}
	doc.Target.Capabilities = t.Capabilities
	doc.Target.Tools = len(t.Tools)
	doc.Target.Descriptions, doc.Target.Notes = t.Descriptions, t.Notes
	doc.Target.Resolvable = []jsonResolvble{}
	for _, tool := range t.Tools {
		if tool.Resolvable() {
			doc.Target.Resolvable = append(doc.Target.Resolvable, jsonResolvble{tool.Name, tool.Coverage})
		}
	}
	doc.FailOn = min
	doc.Failed = r.Count(min) > 0
	doc.Counts = map[string]int{"error": 0, "warning": 0, "info": 0, "suppressed": len(r.Suppressed)}
	for _, f := range r.Findings {
		doc.Counts[f.Severity.String()]++
	}
	doc.Findings, doc.Suppressed, doc.Unused, doc.Checks = r.Findings, r.Suppressed, r.UnusedIgnores, Checks
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// SARIF 2.1.0, the parts lint writes.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool        sarifTool         `json:"tool"`
		Results     []sarifResult     `json:"results"`
		Invocations []sarifInvocation `json:"invocations,omitempty"`
		Properties  map[string]any    `json:"properties,omitempty"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		InformationURI string      `json:"informationUri,omitempty"`
		Version        string      `json:"version,omitempty"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string         `json:"id"`
		Name                 string         `json:"name"`
		ShortDescription     sarifText      `json:"shortDescription"`
		FullDescription      sarifText      `json:"fullDescription"`
		Help                 sarifText      `json:"help"`
		DefaultConfiguration sarifRuleLevel `json:"defaultConfiguration"`
	}
	sarifRuleLevel struct {
		Level string `json:"level"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID       string             `json:"ruleId"`
		RuleIndex    int                `json:"ruleIndex"`
		Level        string             `json:"level"`
		Message      sarifText          `json:"message"`
		Locations    []sarifLocation    `json:"locations,omitempty"`
		Suppressions []sarifSuppression `json:"suppressions,omitempty"`
		Properties   map[string]any     `json:"properties,omitempty"`
	}
	sarifLocation struct {
		PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
		LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           *sarifRegion  `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifLogical struct {
		Name               string `json:"name"`
		FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
		Kind               string `json:"kind,omitempty"`
	}
	sarifSuppression struct {
		Kind          string `json:"kind"`
		Justification string `json:"justification,omitempty"`
	}
	sarifInvocation struct {
		ExecutionSuccessful bool `json:"executionSuccessful"`
	}
)

// SARIFSchema is the $schema URI written in SARIF output.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

// WriteSARIF writes the report as a SARIF 2.1.0 log for code-scanning
// tools: one rule per check, one result per finding (suppressed findings
// carry an external suppression with the configuration's reason). A result
// is located at its tool, as a logical location, and for a catalog file at
// the tool's line in it.
func (r *Report) WriteSARIF(w io.Writer, version string) error {
	rules := make([]sarifRule, len(Checks))
	for i, c := range Checks {
		rules[i] = sarifRule{
			ID:                   c.ID,
			Name:                 ruleName(c.ID),
			ShortDescription:     sarifText{firstClause(c.Explanation)},
			FullDescription:      sarifText{c.Explanation},
			Help:                 sarifText{"Fix: " + c.Fix},
			DefaultConfiguration: sarifRuleLevel{c.Severity.sarifLevel()},
		}
	}
	t := r.Target
	server := ""
	if t.Server != nil {
		server = t.Server.Name
	}
	result := func(f Finding) sarifResult {
		msg := f.Message
		if f.Tool != "" {
			msg = f.Tool + ": " + msg
		}
		if f.Arguments != nil {
			msg += fmt.Sprintf(" (tools/resolve %s, %s shape)", argsText(f.Arguments), f.Shape)
		}
		res := sarifResult{RuleID: f.Check, RuleIndex: checkIndex(f.Check), Level: f.Severity.sarifLevel(), Message: sarifText{msg + ". Fix: " + f.Fix}}
		loc := sarifLocation{}
		name := f.Tool
		if name == "" {
			name = server
		}
		if name != "" {
			kind := "function"
			if f.Tool == "" {
				kind = "module"
			}
			fq := name
			if server != "" && f.Tool != "" {
				fq = server + "/" + f.Tool
			}
			loc.LogicalLocations = []sarifLogical{{Name: name, FullyQualifiedName: fq, Kind: kind}}
		}
		if t.Kind == KindCatalog && t.Source != "" {
			// A URI reference: spaces, % and # in the path are escaped.
			p := &sarifPhysical{ArtifactLocation: sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(t.Source)}).String()}}
			if f.Line > 0 {
				p.Region = &sarifRegion{StartLine: f.Line}
			}
			loc.PhysicalLocation = p
		}
		if loc.PhysicalLocation != nil || loc.LogicalLocations != nil {
			res.Locations = []sarifLocation{loc}
		}
		if f.Arguments != nil {
			res.Properties = map[string]any{"arguments": f.Arguments, "shape": f.Shape}
		}
		if f.Suppressed != "" {
			res.Suppressions = []sarifSuppression{{Kind: "external", Justification: f.Suppressed}}
		}
		return res
	}
	run := sarifRun{
		Tool:        sarifTool{Driver: sarifDriver{Name: "preflight lint", InformationURI: "https://github.com/preflightmcp/preflight", Version: version, Rules: rules}},
		Results:     []sarifResult{},
		Invocations: []sarifInvocation{{ExecutionSuccessful: true}},
		Properties:  map[string]any{"target": r.Summary()},
	}
	for _, f := range r.Findings {
		run.Results = append(run.Results, result(f))
	}
	for _, f := range r.Suppressed {
		run.Results = append(run.Results, result(f))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []sarifRun{run}})
}

// ruleName turns a check id into a SARIF rule name: "DestructiveUnconfirmed".
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// firstClause is the text before the first comma, semicolon or colon.
func firstClause(s string) string {
	if i := strings.IndexAny(s, ";,:"); i > 0 {
		return s[:i]
	}
	return s
}
