package tokens

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	tool := &mcp.Tool{
		Meta:         mcp.Meta{"x": 1},
		Name:         "n",
		Title:        "T",
		Description:  "reads <a> & <b>",
		InputSchema:  map[string]any{"type": "object"},
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
		Icons:        []mcp.Icon{{Source: "data:image/png;base64,AAAA"}},
	}
	b, err := Visible(tool)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"n","title":"T","description":"reads <a> & <b>","inputSchema":{"type":"object"},"annotations":{"idempotentHint":false,"readOnlyHint":true}}`
	if string(b) != want {
		t.Errorf("Visible =\n%s\nwant\n%s", b, want)
	}
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	c := counter(t)
	tool := func(name, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}}
	}
	long := strings.Repeat("Reads a very long description. ", 20)
	ts := []Tool{
		{Listed: tool("a", long), Minimal: tool("a", "Reads a.")},
		{Listed: tool("b", long+long), Minimal: tool("b", "Reads b."), Fetched: map[string]any{"name": "b", "examples": []string{long, long, long}}},
		{Listed: tool("c", "Reads c."), Minimal: tool("c", "")},
	}
	r, err := Measure(c, ts, []int{1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	count := func(v any) int {
		b, err := marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return c.Count(string(b))
	}
	visible := func(tool *mcp.Tool) int {
		b, _ := Visible(tool)
		return c.Count(string(b))
	}
	var today, minimal int
	for i, tt := range ts {
		pt := r.PerTool[i]
		if pt.Name != tt.Listed.Name || pt.Today != visible(tt.Listed) || pt.Minimal != visible(tt.Minimal) {
			t.Errorf("tool %s: %+v", tt.Listed.Name, pt)
		}
		today += pt.Today
		minimal += pt.Minimal
	}
	// A fetch is the resource's one-tool answer: {"NAME": ENTRY}.
	listedA, _ := Visible(ts[0].Listed)
	if want := count(map[string]any{"a": json.RawMessage(listedA)}); r.PerTool[0].Fetch != want {
		t.Errorf("fetch a = %d, want %d (the listing's JSON when nothing is fetched)", r.PerTool[0].Fetch, want)
	}
	if want := count(map[string]any{"b": ts[1].Fetched}); r.PerTool[1].Fetch != want {
		t.Errorf("fetch b = %d, want %d", r.PerTool[1].Fetch, want)
	}
	if r.Tools != 3 || r.Today != today || r.Minimal != minimal || r.Encoding != Encoding {
		t.Errorf("report = %+v", r)
	}
	if want := 100 * float64(today-minimal) / float64(today); math.Abs(r.Saving-want) > 1e-9 {
		t.Errorf("saving = %v, want %v", r.Saving, want)
	}
	if !slices.Equal(r.Failing, []string{"c"}) || !slices.Equal(r.PerTool[2].Problems, []string{ProblemEmpty}) || r.PerTool[2].SourceProblems != nil {
		t.Errorf("failing = %v, problems of c = %v / %v", r.Failing, r.PerTool[2].Problems, r.PerTool[2].SourceProblems)
	}

	fetches := []int{r.PerTool[0].Fetch, r.PerTool[1].Fetch, r.PerTool[2].Fetch}
	mean := float64(fetches[0]+fetches[1]+fetches[2]) / 3
	if want := float64(today-minimal) / mean; math.Abs(r.BreakEven-want) > 1e-9 {
		t.Errorf("break-even = %v, want %v", r.BreakEven, want)
	}
	if len(r.Tasks) != 3 {
		t.Fatalf("tasks = %+v", r.Tasks)
	}
	// b is the largest fetch, then a, then c.
	for i, want := range []TaskCost{
		{K: 1, Fetched: 1, Mean: mean, Max: fetches[1], MaxTools: []string{"b"}},
		{K: 2, Fetched: 2, Mean: 2 * mean, Max: fetches[1] + fetches[0], MaxTools: []string{"b", "a"}},
		{K: 5, Fetched: 3, Mean: 3 * mean, Max: fetches[0] + fetches[1] + fetches[2], MaxTools: []string{"b", "a", "c"}},
	} {
		got := r.Tasks[i]
		want.MeanSession, want.MaxSession = float64(minimal)+want.Mean, minimal+want.Max
		if got.K != want.K || got.Fetched != want.Fetched || math.Abs(got.Mean-want.Mean) > 1e-9 || got.Max != want.Max ||
			!slices.Equal(got.MaxTools, want.MaxTools) || math.Abs(got.MeanSession-want.MeanSession) > 1e-9 || got.MaxSession != want.MaxSession {
			t.Errorf("task %d = %+v, want %+v", i, got, want)
		}
	}
}

// TestMeanOverSubsets checks the closed form of the mean against an
// enumeration of every k-subset.
func TestMeanOverSubsets(t *testing.T) {
	t.Parallel()
	c := counter(t)
	var ts []Tool
	for i, d := range []string{"Gets one.", "Lists two things, with a longer text.", "Creates three.", "Deletes four items from the store, which takes more words.", "Reads five."} {
		tool := &mcp.Tool{Name: string(rune('a' + i)), Description: d, InputSchema: map[string]any{"type": "object"}}
		ts = append(ts, Tool{Listed: tool, Minimal: tool})
	}
	r, err := Measure(c, ts, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	var sum, sets, worst int
	for mask := 0; mask < 1<<len(ts); mask++ {
		if popcount(mask) != 3 {
			continue
		}
		s := 0
		for i := range ts {
			if mask&(1<<i) != 0 {
				s += r.PerTool[i].Fetch
			}
		}
		sum += s
		sets++
		worst = max(worst, s)
	}
	if got, want := r.Tasks[0].Mean, float64(sum)/float64(sets); math.Abs(got-want) > 1e-9 {
		t.Errorf("mean = %v, enumeration gives %v", got, want)
	}
	if r.Tasks[0].Max != worst {
		t.Errorf("max = %d, enumeration gives %d", r.Tasks[0].Max, worst)
	}
}

func popcount(x int) int {
	n := 0
	for ; x > 0; x &= x - 1 {
		n++
	}
	return n
}

func TestMeasureErrors(t *testing.T) {
	t.Parallel()
	c := counter(t)
	tool := &mcp.Tool{Name: "a"}
	if _, err := Measure(c, []Tool{{Listed: tool}}, nil); err == nil {
		t.Error("no Minimal: no error")
	}
	if _, err := Measure(c, []Tool{{Listed: tool, Minimal: tool}}, []int{0}); err == nil {
		t.Error("k = 0: no error")
	}
	r, err := Measure(c, nil, []int{1})
	if err != nil || r.Tools != 0 || r.Saving != 0 || r.Tasks[0].Fetched != 0 || r.Tasks[0].Mean != 0 {
		t.Errorf("empty catalog: %+v, %v", r, err)
	}
}

func TestCheckDescription(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, desc string
		want       []string
	}{
		{"read_file", "Read the complete contents of a file as text.", nil},
		{"echo", "Echoes back the input string", nil},
		{"get_label", "Get a specific label from a repository.", nil},
		{"x", "Retrieves data from the system with filtering.", nil},
		{"x", "Searching issues by label", nil},
		{"x", "Stopped containers are removed", nil},
		{"12306-mcp__get-tickets", "查询12306余票信息。", nil},
		{"x", "도서 정보를 조회합니다", nil},
		{"x", "", []string{ProblemEmpty}},
		{"x", " \n\t", []string{ProblemEmpty}},
		{"coin-flip__get-problem", "Coin flip get problem", []string{ProblemOnlyName}},
		{"yahoo-finance__get_earning_dates", "Get earning dates.", []string{ProblemOnlyName}},
		{"web3__token", "Token", []string{ProblemOnlyName, ProblemNoVerb}},
		{"valorant", "Valorant character meta data", []string{ProblemNoVerb}},
		{"whatToEat", "不知道吃什么？", []string{ProblemNoVerb}},
	} {
		if got := CheckDescription(tc.name, tc.desc); !slices.Equal(got, tc.want) {
			t.Errorf("CheckDescription(%q, %q) = %q, want %q", tc.name, tc.desc, got, tc.want)
		}
	}
}

func TestFieldCost(t *testing.T) {
	t.Parallel()
	c := counter(t)
	tool := &mcp.Tool{
		Name:        "search_issues",
		Title:       "Search issues",
		Description: "Search issues by label, author and state.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Search issues"},
	}
	r, err := Measure(c, []Tool{{Listed: tool, Minimal: tool}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(edit func(*mcp.Tool)) int {
		t2 := *tool
		edit(&t2)
		b, err := Visible(&t2)
		if err != nil {
			t.Fatal(err)
		}
		return c.Count(string(b))
	}
	full := count(func(*mcp.Tool) {})
	want := FieldCost{
		Title:       full - count(func(t *mcp.Tool) { t.Title = "" }),
		Description: full - count(func(t *mcp.Tool) { t.Description = "" }),
		InputSchema: full - count(func(t *mcp.Tool) { t.InputSchema = map[string]any{"type": "object"} }),
		Annotations: full - count(func(t *mcp.Tool) { t.Annotations = nil }),
	}
	if r.MinimalFields != want || r.PerTool[0].MinimalFields != want {
		t.Errorf("field costs = %+v / %+v, want %+v", r.MinimalFields, r.PerTool[0].MinimalFields, want)
	}
	if want.Title <= 0 || want.Description <= 0 || want.InputSchema <= 0 || want.Annotations <= 0 ||
		want.Title+want.Description+want.InputSchema+want.Annotations >= full {
		t.Errorf("implausible field costs %+v of %d tokens", want, full)
	}
}
