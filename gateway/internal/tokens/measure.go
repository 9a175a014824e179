package tokens

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// visible is what a model is shown of a tool, in the order the fields
// are written.
type visible struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema any                  `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// Visible returns the compact JSON of what a model is shown of t: its
// name, title, description, inputSchema and annotations, encoded as the Go
// SDK encodes them (object keys of decoded schemas sorted, readOnlyHint
// and idempotentHint always present in annotations, no HTML escaping).
// Icons (the GitHub server's are large base64 images), _meta, outputSchema
// and anything else are left out: clients do not put them in the model's
// context.
func Visible(t *mcp.Tool) ([]byte, error) {
	return marshal(visible{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: t.InputSchema,
		Annotations: t.Annotations,
	})
}

// marshal is compact JSON without HTML escaping ("<" stays "<", as a
// model would read it).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Tool is one tool in the forms [Measure] compares.
type Tool struct {
	// Listed is the tool as tools/list serves it today, without
	// progressive disclosure. Required.
	Listed *mcp.Tool
	// Minimal is the tool as a disclosing server lists it. Required.
	Minimal *mcp.Tool
	// Fetched is what reading the tool's full description returns (an
	// entry of the tool_descriptions resource, any JSON-marshalable
	// value); all of it is counted, since the model reads the resource's
	// text whole. Nil counts Listed's [Visible] JSON instead.
	Fetched any
}

// ToolCount is the measure of one tool.
type ToolCount struct {
	Name string `json:"name"`
	// Today are the tokens of the tool's visible JSON as listed today.
	Today int `json:"today"`
	// Minimal are the tokens of its visible JSON in the minimal listing.
	Minimal int `json:"minimal"`
	// Fetch are the tokens of fetching its full description on its own:
	// the JSON object {"NAME": ENTRY} a tool_descriptions read returns.
	Fetch int `json:"fetch"`
	// MinimalDescription is the description the minimal listing gives.
	MinimalDescription string `json:"minimalDescription"`
	// MinimalFields is where the tool's minimal tokens go.
	MinimalFields FieldCost `json:"minimalFields"`
	// Problems are why MinimalDescription fails [CheckDescription]; empty
	// when it passes.
	Problems []string `json:"problems,omitempty"`
	// SourceProblems are the problems of the tool's description as listed
	// today: when it fails too, the derivation had nothing better to
	// start from.
	SourceProblems []string `json:"sourceProblems,omitempty"`
}

// TaskCost is what fetching the descriptions of a k-tool task costs.
type TaskCost struct {
	// K is the number of tools the task needs, as asked.
	K int `json:"k"`
	// Fetched is the number of descriptions priced: K, or every tool when
	// the catalog has fewer.
	Fetched int `json:"fetched"`
	// Mean is the mean, over every set of Fetched distinct tools, of the
	// tokens of fetching their descriptions: Fetched times the mean
	// per-tool fetch cost (exact, by linearity).
	Mean float64 `json:"mean"`
	// Max is the most expensive such set: the Fetched largest
	// descriptions, listed in MaxTools.
	Max      int      `json:"max"`
	MaxTools []string `json:"maxTools"`
	// MeanSession and MaxSession add the minimal listing: the tokens a
	// model reads for the task with disclosure, to set against the
	// listing of today.
	MeanSession float64 `json:"meanSession"`
	MaxSession  int     `json:"maxSession"`
}

// Report is the measure of one catalog.
type Report struct {
	// Encoding is the tokenizer's encoding, [Encoding].
	Encoding string `json:"encoding"`
	// Tools is the number of tools.
	Tools int `json:"tools"`
	// Today and Minimal are the tokens of the two listings: the sums of
	// the tools' counts (the few tokens of the enclosing array are left
	// out).
	Today   int `json:"today"`
	Minimal int `json:"minimal"`
	// Saving is how much smaller the minimal listing is, in percent of
	// Today (0 for an empty catalog).
	Saving float64 `json:"saving"`
	// BreakEven is how many descriptions of mean cost a model can fetch
	// before the minimal listing and the fetches cost as much as today's
	// listing; 0 when the minimal listing saves nothing.
	BreakEven float64 `json:"breakEven"`
	// Tasks are the costs of k-tool tasks, one per k asked.
	Tasks []TaskCost `json:"tasks"`
	// PerTool are the tools in the order given.
	PerTool []ToolCount `json:"perTool"`
	// Failing names the tools whose minimal description fails
	// [CheckDescription].
	Failing []string `json:"failing,omitempty"`
	// MinimalFields says where the minimal listing's tokens go, summed
	// over the tools.
	MinimalFields FieldCost `json:"minimalFields"`
}

// FieldCost is the marginal cost of each field of a listing: how many
// tokens fewer it would have without the field. The name and the JSON
// around the fields make up the rest.
type FieldCost struct {
	Title       int `json:"title"`
	Description int `json:"description"`
	// InputSchema is the cost beyond {"type":"object"}, the smallest
	// input schema MCP allows.
	InputSchema int `json:"inputSchema"`
	// Annotations include their title, if any.
	Annotations int `json:"annotations"`
}

// Measure counts tools with c and prices tasks of each size in ks (sizes
// below 1 are refused).
func Measure(c *Counter, tools []Tool, ks []int) (*Report, error) {
	r := &Report{Encoding: Encoding, Tools: len(tools), PerTool: make([]ToolCount, 0, len(tools))}
	for i, t := range tools {
		if t.Listed == nil || t.Minimal == nil {
			return nil, fmt.Errorf("tool %d: Listed and Minimal are required", i)
		}
		tc, err := measureTool(c, t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Listed.Name, err)
		}
		r.Today += tc.Today
		r.Minimal += tc.Minimal
		r.MinimalFields.Title += tc.MinimalFields.Title
		r.MinimalFields.Description += tc.MinimalFields.Description
		r.MinimalFields.InputSchema += tc.MinimalFields.InputSchema
		r.MinimalFields.Annotations += tc.MinimalFields.Annotations
		if len(tc.Problems) > 0 {
			r.Failing = append(r.Failing, tc.Name)
		}
		r.PerTool = append(r.PerTool, tc)
	}
	if r.Today > 0 {
		r.Saving = 100 * float64(r.Today-r.Minimal) / float64(r.Today)
	}

	// Fetch costs, largest first (ties by name, for stable output).
	order := make([]int, len(r.PerTool))
	fetchTotal := 0
	for i := range order {
		order[i] = i
		fetchTotal += r.PerTool[i].Fetch
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := r.PerTool[a], r.PerTool[b]
		return cmp.Or(cmp.Compare(tb.Fetch, ta.Fetch), cmp.Compare(ta.Name, tb.Name))
	})
	meanFetch := 0.0
	if len(tools) > 0 {
		meanFetch = float64(fetchTotal) / float64(len(tools))
	}
	if meanFetch > 0 && r.Today > r.Minimal {
		r.BreakEven = float64(r.Today-r.Minimal) / meanFetch
	}
	for _, k := range ks {
		if k < 1 {
			return nil, fmt.Errorf("task size %d: want 1 or more", k)
		}
		n := min(k, len(tools))
		tc := TaskCost{K: k, Fetched: n, Mean: float64(n) * meanFetch, MaxTools: []string{}}
		for _, i := range order[:n] {
			tc.Max += r.PerTool[i].Fetch
			tc.MaxTools = append(tc.MaxTools, r.PerTool[i].Name)
		}
		tc.MeanSession = float64(r.Minimal) + tc.Mean
		tc.MaxSession = r.Minimal + tc.Max
		r.Tasks = append(r.Tasks, tc)
	}
	return r, nil
}

func measureTool(c *Counter, t Tool) (ToolCount, error) {
	tc := ToolCount{Name: t.Listed.Name, MinimalDescription: t.Minimal.Description}
	today, err := Visible(t.Listed)
	if err != nil {
		return tc, err
	}
	minimal, err := Visible(t.Minimal)
	if err != nil {
		return tc, err
	}
	var entry any = json.RawMessage(today)
	if t.Fetched != nil {
		entry = t.Fetched
	}
	fetched, err := marshal(map[string]any{t.Listed.Name: entry})
	if err != nil {
		return tc, err
	}
	tc.Today, tc.Minimal, tc.Fetch = c.Count(string(today)), c.Count(string(minimal)), c.Count(string(fetched))
	if tc.MinimalFields, err = fieldCost(c, t.Minimal, tc.Minimal); err != nil {
		return tc, err
	}
	tc.Problems = CheckDescription(t.Minimal.Name, t.Minimal.Description)
	if len(tc.Problems) > 0 {
		tc.SourceProblems = CheckDescription(t.Listed.Name, t.Listed.Description)
	}
	return tc, nil
}

// fieldCost returns the marginal cost of each field of t, whose visible
// JSON has n tokens.
func fieldCost(c *Counter, t *mcp.Tool, n int) (FieldCost, error) {
	var fc FieldCost
	for _, f := range []struct {
		cost *int
		drop func(*mcp.Tool)
	}{
		{&fc.Title, func(t *mcp.Tool) { t.Title = "" }},
		{&fc.Description, func(t *mcp.Tool) { t.Description = "" }},
		{&fc.InputSchema, func(t *mcp.Tool) { t.InputSchema = map[string]any{"type": "object"} }},
		{&fc.Annotations, func(t *mcp.Tool) { t.Annotations = nil }},
	} {
		without := *t
		f.drop(&without)
		b, err := Visible(&without)
		if err != nil {
			return fc, err
		}
		*f.cost = n - c.Count(string(b))
	}
	return fc, nil
}
