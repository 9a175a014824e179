package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/tokens"
)

// The goal progressive disclosure is measured against (issue 4): at
// least goalSaving percent fewer initial tokens on every catalog of
// goalMinTools tools or more.
const (
	goalMinTools = 9
	goalSaving   = 85.0
)

type tokensCmd struct {
	common
	server serverFlags
	k      string
	schema string
	tools  bool
}

func (c *tokensCmd) synopsis() string {
	return `usage: preflight tokens [flags] CATALOG.json...
       preflight tokens [flags] -url URL
       preflight tokens [flags] -- COMMAND [ARG...]

Counts the tokens a model reads for a server's tools, in OpenAI's o200k_base
encoding (offline: the ranks are built in), and compares three things:

  today     tools/list as the server serves it
  minimal   the minimal listing of progressive disclosure (seed 004), made
            by package disclose (short description, schema simplified to
            -schema); saving is how much smaller it is than today
  k=N       fetching the full descriptions a task of N tools needs, through
            the tool_descriptions resource: the mean over every set of N
            tools (N times the mean description) / the largest set (the N
            largest descriptions)

A tool counts as the compact JSON of what a model is shown of it: name,
title, description, inputSchema and annotations. Icons (the GitHub
server's are large base64 images), _meta and outputSchema are left out;
a fetched description counts whole, outputSchema included.

The tools come from catalog files (a tools/list result, a JSON-RPC
response holding one, or an array of tools) or from a running server,
over streamable HTTP (-url) or by starting COMMAND over stdio. A server
that already serves the tool_descriptions resource is measured as served:
its listing is the minimal one, and its full descriptions are read from
the resource.

Each minimal description is checked to still say what its tool does (not
empty, not just the tool's name, has a verb); those that fail are listed.
The last line says whether the goal holds: at least 85% fewer tokens on
every catalog of 9 tools or more. -format markdown writes the summary as
the tables of docs/tokens.md.

Exit status: 0 measured (whatever the verdict); 2 usage error; 3 a catalog
could not be read (or is empty), the server could not be started or
reached, its handshake, tools/list or tool_descriptions failed, -timeout.

Examples:

  preflight tokens testdata/catalogs/*.json
  preflight tokens -tools -k 1,2,10 testdata/catalogs/server-memory.json
  preflight tokens -url http://127.0.0.1:8080/mcp
  preflight tokens -format json -- npx -y @modelcontextprotocol/server-memory
`
}

func (c *tokensCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json", "markdown"}, "json", "markdown")
	c.server.bind(fs)
	c.bindTimeout(fs)
	fs.StringVar(&c.k, "k", "1,3,5", "task sizes to price: comma-separated numbers of tools")
	fs.StringVar(&c.schema, "schema", disclose.SchemaObject.String(),
		"how far the minimal listing simplifies input schemas: object, open, toplevel or full (see package disclose)")
	fs.BoolVar(&c.tools, "tools", false, "also print a table of every tool (text)")
}

// tokensDoc is the JSON output.
type tokensDoc struct {
	Encoding string `json:"encoding"`
	// Schema is the schema level of derived minimal listings.
	Schema   string          `json:"schema"`
	K        []int           `json:"k"`
	Catalogs []catalogReport `json:"catalogs"`
	Goal     goalView        `json:"goal"`
}

// catalogReport is the measure of one source.
type catalogReport struct {
	// Source is the file, URL or command measured.
	Source string `json:"source"`
	// Kind is "file", "url" or "command".
	Kind string `json:"kind"`
	// MinimalFrom says where the minimal listing came from: "derived" by
	// disclose.Minimal, or "served" by a server with disclosure on.
	MinimalFrom string `json:"minimalFrom"`
	*tokens.Report
}

// goalView is the verdict on the goal.
type goalView struct {
	MinTools  int     `json:"minTools"`
	MinSaving float64 `json:"minSaving"`
	Met       bool    `json:"met"`
	// Missed are the catalogs of MinTools tools or more that save less.
	Missed []string `json:"missed,omitempty"`
	// FailingDescriptions counts the minimal descriptions that fail the
	// check, over every catalog.
	FailingDescriptions int `json:"failingDescriptions"`
	// InheritedFailures counts those whose description as listed today
	// fails the check too.
	InheritedFailures int `json:"inheritedFailures"`
}

func (c *tokensCmd) run(ctx context.Context, env *env, inv invocation) error {
	ks, err := parseKs(c.k)
	if err != nil {
		return err
	}
	level, ok := disclose.ParseSchemaLevel(c.schema)
	if !ok {
		return usagef("-schema %q: want object, open, toplevel or full", c.schema)
	}
	if err := c.server.check(inv, math.MaxInt); err != nil {
		return err
	}

	counter, err := tokens.O200k()
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	doc := tokensDoc{Encoding: tokens.Encoding, Schema: level.String(), K: ks,
		Goal: goalView{MinTools: goalMinTools, MinSaving: goalSaving, Met: true}}
	measure := func(source, kind, minimal string, ts []tokens.Tool) error {
		r, err := tokens.Measure(counter, ts, ks)
		if err != nil {
			return couldNotRun(fmt.Errorf("%s: %w", source, err))
		}
		doc.Catalogs = append(doc.Catalogs, catalogReport{Source: source, Kind: kind, MinimalFrom: minimal, Report: r})
		return nil
	}
	if c.server.server(inv) {
		ts, served, err := c.fromServer(ctx, env, inv, level)
		if err != nil {
			return err
		}
		kind, minimal := "url", "derived"
		if c.server.url == "" {
			kind = "command"
		}
		if served {
			minimal = "served"
		}
		if err := measure(c.server.source(inv), kind, minimal, ts); err != nil {
			return err
		}
	} else {
		for _, file := range inv.args {
			listed, err := catalogTools(file)
			if err != nil {
				return err
			}
			if err := measure(file, "file", "derived", derive(listed, level)); err != nil {
				return err
			}
		}
	}
	for _, r := range doc.Catalogs {
		if r.Tools >= goalMinTools && r.Saving < goalSaving {
			doc.Goal.Met = false
			doc.Goal.Missed = append(doc.Goal.Missed, r.Source)
		}
		doc.Goal.FailingDescriptions += len(r.Failing)
		for _, t := range r.PerTool {
			if len(t.Problems) > 0 && len(t.SourceProblems) > 0 {
				doc.Goal.InheritedFailures++
			}
		}
	}
	if doc.Goal.FailingDescriptions > 0 {
		doc.Goal.Met = false
	}
	switch c.format {
	case "json":
		return writeJSON(env.stdout, doc)
	case "markdown":
		return c.writeMarkdown(env.stdout, doc)
	}
	return c.writeText(env.stdout, doc)
}

// parseKs parses the -k list.
func parseKs(s string) ([]int, error) {
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, usagef("-k %q: want comma-separated numbers of tools, 1 or more, such as 1,3,5", s)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// catalogTools reads a catalog file (with the reader every command uses)
// as the SDK's tools.
func catalogTools(file string) ([]*mcp.Tool, error) {
	t, err := readCatalog(file)
	if err != nil {
		return nil, err
	}
	tools := make([]*mcp.Tool, len(t.Tools))
	for i, tool := range t.Tools {
		if tools[i], err = tool.MCP(); err != nil {
			return nil, couldNotRun(fmt.Errorf("%s: %w", file, err))
		}
	}
	return tools, nil
}

// derive pairs each listed tool with its minimal listing and its full
// definition, both made by package disclose.
func derive(listed []*mcp.Tool, level disclose.SchemaLevel) []tokens.Tool {
	ts := make([]tokens.Tool, len(listed))
	for i, t := range listed {
		ts[i] = tokens.Tool{Listed: t, Minimal: disclose.Minimal(t, level), Fetched: disclose.Full(t, nil)}
	}
	return ts
}

// fromServer lists a server's tools. When the server serves the
// tool_descriptions resource, its listing is already minimal: the full
// descriptions are read from the resource and stand for the listing of
// today. served reports which.
func (c *tokensCmd) fromServer(ctx context.Context, env *env, inv invocation, level disclose.SchemaLevel) (ts []tokens.Tool, served bool, err error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "preflight-tokens", Version: version}, nil)
	cs, closeSession, err := c.server.dial(ctx, client, inv, env.stderr, nil)
	if err != nil {
		return nil, false, err
	}
	defer closeSession()

	var listed []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, false, couldNotRun(fmt.Errorf("tools/list: %s", errText(err)))
		}
		listed = append(listed, t)
	}
	uri, err := descriptionsResource(ctx, cs)
	if err != nil {
		return nil, false, couldNotRun(err)
	}
	if uri == "" {
		return derive(listed, level), false, nil
	}
	names := make([]string, len(listed))
	for i, t := range listed {
		names[i] = t.Name
	}
	full, err := readDescriptions(ctx, cs, uri, names)
	if err != nil {
		return nil, false, couldNotRun(err)
	}
	for _, t := range listed {
		entry := full[t.Name]
		var today mcp.Tool
		if err := json.Unmarshal(entry, &today); err != nil || today.Name != t.Name {
			return nil, false, couldNotRun(fmt.Errorf("resources/read %s: the entry of %s is not a tool definition: %s", uri, text.OneLine(t.Name), shorten(string(entry), 120)))
		}
		ts = append(ts, tokens.Tool{Listed: &today, Minimal: t, Fetched: entry})
	}
	return ts, true, nil
}

// summaryRow is one catalog's row of the summary table.
func summaryRow(r catalogReport) []string {
	name := r.Source
	if r.Kind == "file" {
		name = filepath.Base(name)
	}
	if r.MinimalFrom == "served" {
		name += " (served)"
	}
	row := []string{name, strconv.Itoa(r.Tools), strconv.Itoa(r.Today), strconv.Itoa(r.Minimal), percent(r.Saving),
		strconv.FormatFloat(r.BreakEven, 'f', 1, 64)}
	for _, t := range r.Tasks {
		row = append(row, fmt.Sprintf("%.0f / %d", t.Mean, t.Max))
	}
	return row
}

// fieldsHead heads the table of where the minimal listing's tokens go.
var (
	fieldsHead         = []string{"CATALOG", "MINIMAL", "ANNOTATIONS", "TITLE", "INPUTSCHEMA", "DESCRIPTION", "NAME AND JSON"}
	fieldsHeadMarkdown = []string{"catalog", "minimal", "annotations", "title", "inputSchema", "description", "name and JSON"}
)

// fieldsRow is one catalog's row of that table, each field with its
// share of the minimal listing.
func fieldsRow(r catalogReport) []string {
	f := r.MinimalFields
	share := func(n int) string {
		if r.Minimal == 0 {
			return strconv.Itoa(n)
		}
		return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(r.Minimal))
	}
	rest := r.Minimal - f.Annotations - f.Title - f.InputSchema - f.Description
	return []string{summaryRow(r)[0], strconv.Itoa(r.Minimal), share(f.Annotations), share(f.Title), share(f.InputSchema), share(f.Description), share(rest)}
}

// writeText writes the summary table, the failing descriptions, the
// verdict and, with -tools, a table per catalog.
func (c *tokensCmd) writeText(w io.Writer, doc tokensDoc) error {
	fmt.Fprintf(w, "%s tokens; minimal listing by package disclose, schema %s\n", doc.Encoding, doc.Schema)
	fmt.Fprintln(w, "BREAK-EVEN: descriptions of mean size a task can fetch before it costs more than today's listing")
	fmt.Fprint(w, "K=N: tokens of fetching the descriptions of N tools, mean over all sets of N / the N largest\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"CATALOG", "TOOLS", "TODAY", "MINIMAL", "SAVING", "BREAK-EVEN"}
	for _, k := range doc.K {
		head = append(head, fmt.Sprintf("K=%d", k))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range doc.Catalogs {
		fmt.Fprintln(tw, strings.Join(summaryRow(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(w, "\nWhere the minimal listing's tokens go (tokens it would save without each field; inputSchema: beyond {\"type\":\"object\"}):\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(fieldsHead, "\t"))
	for _, r := range doc.Catalogs {
		fmt.Fprintln(tw, strings.Join(fieldsRow(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c.writeFailures(w, doc)
	fmt.Fprintf(w, "\n%s\n", verdict(doc.Goal))
	if c.tools {
		for _, r := range doc.Catalogs {
			if err := writeToolTable(w, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeMarkdown writes the summary as a Markdown table, for docs.
func (c *tokensCmd) writeMarkdown(w io.Writer, doc tokensDoc) error {
	head := []string{"catalog", "tools", "today", "minimal", "saving", "break-even"}
	align := []string{"---", "--:", "--:", "--:", "--:", "--:"}
	for _, k := range doc.K {
		head = append(head, fmt.Sprintf("k=%d mean / max", k))
		align = append(align, "--:")
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(align, " | "))
	for _, r := range doc.Catalogs {
		fmt.Fprintf(w, "| %s |\n", strings.Join(summaryRow(r), " | "))
	}
	fmt.Fprint(w, "\nWhere the minimal listing's tokens go (tokens it would save without each field; inputSchema: beyond {\"type\":\"object\"}):\n\n")
	fmt.Fprintf(w, "| %s |\n| --- |%s\n", strings.Join(fieldsHeadMarkdown, " | "), strings.Repeat(" --: |", len(fieldsHeadMarkdown)-1))
	for _, r := range doc.Catalogs {
		fmt.Fprintf(w, "| %s |\n", strings.Join(fieldsRow(r), " | "))
	}
	c.writeFailures(w, doc)
	fmt.Fprintf(w, "\n%s\n", verdict(doc.Goal))
	return nil
}

// writeFailures lists the minimal descriptions that fail the check.
func (c *tokensCmd) writeFailures(w io.Writer, doc tokensDoc) {
	if doc.Goal.FailingDescriptions == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d minimal descriptions fail the check (not empty, not just the tool's name, has a verb), %d of them because the listed description fails too:\n\n",
		doc.Goal.FailingDescriptions, doc.Goal.InheritedFailures)
	for _, r := range doc.Catalogs {
		for _, t := range r.PerTool {
			if len(t.Problems) == 0 {
				continue
			}
			note := ""
			if len(t.SourceProblems) > 0 {
				note = " (listed today: " + strings.Join(t.SourceProblems, ", ") + ")"
			}
			fmt.Fprintf(w, "- %s %s: %q: %s%s\n", filepath.Base(r.Source), text.OneLine(t.Name), t.MinimalDescription, strings.Join(t.Problems, ", "), note)
		}
	}
}

// verdict says in one line whether the goal holds.
func verdict(g goalView) string {
	v := "met"
	if !g.Met {
		var why []string
		if len(g.Missed) > 0 {
			names := make([]string, len(g.Missed))
			for i, m := range g.Missed {
				names[i] = filepath.Base(m)
			}
			why = append(why, "saves less on "+strings.Join(names, ", "))
		}
		if g.FailingDescriptions > 0 {
			why = append(why, fmt.Sprintf("%d minimal descriptions fail the check", g.FailingDescriptions))
		}
		v = "missed: " + strings.Join(why, "; ")
	}
	return fmt.Sprintf("goal (at least %.0f%% fewer tokens on every catalog of %d tools or more; every minimal description says what its tool does): %s",
		g.MinSaving, g.MinTools, v)
}

// writeToolTable writes one catalog's tools.
func writeToolTable(w io.Writer, r catalogReport) error {
	fmt.Fprintf(w, "\n%s: %d tools\n", r.Source, r.Tools)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTODAY\tMINIMAL\tSAVING\tFETCH\tCHECK\tMINIMAL DESCRIPTION")
	for _, t := range r.PerTool {
		saving := 0.0
		if t.Today > 0 {
			saving = 100 * float64(t.Today-t.Minimal) / float64(t.Today)
		}
		check := "ok"
		if len(t.Problems) > 0 {
			check = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\n", text.OneLine(t.Name), t.Today, t.Minimal, percent(saving), t.Fetch, check, shorten(t.MinimalDescription, 70))
	}
	return tw.Flush()
}

func percent(p float64) string { return strconv.FormatFloat(p, 'f', 1, 64) + "%" }
