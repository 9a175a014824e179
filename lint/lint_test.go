package lint

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestEnumerate(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{"type": "string", "enum": []any{"read", "delete"}},
			"force":  map[string]any{"type": "boolean"},
			"path":   map[string]any{"type": "string", "minLength": float64(20)},
			"count":  map[string]any{"type": "integer", "minimum": float64(3)},
			"mode":   map[string]any{"type": "string", "examples": []any{"fast"}, "default": "slow"},
			"note":   map[string]any{"type": "string"},
		},
		"required":             []any{"action", "path", "count"},
		"additionalProperties": false,
	}
	a := Enumerate(schema, 0)
	// action (2) x force (true, false, absent) x mode (fast, slow, absent).
	if len(a.Valid) != 18 || a.Capped || a.Skipped != 0 {
		t.Fatalf("valid = %d, capped %v, skipped %d; want 18, false, 0", len(a.Valid), a.Capped, a.Skipped)
	}
	if !slices.Equal(a.Enumerated, []string{"action", "force", "mode"}) {
		t.Errorf("enumerated = %v", a.Enumerated)
	}
	for i, v := range a.Valid {
		if p, _ := v["path"].(string); len(p) < 20 {
			t.Errorf("variant %d: path %q shorter than minLength", i, p)
		}
		if v["count"] != int64(3) {
			t.Errorf("variant %d: count = %v, want the minimum 3", i, v["count"])
		}
		if _, ok := v["note"]; ok {
			t.Errorf("variant %d sets the optional free-form note", i)
		}
	}
	if a.Labels[0] != "action=read force=true mode=fast" {
		t.Errorf("first label = %q", a.Labels[0])
	}
	kinds := strings.Join(a.Kinds, "; ")
	for _, want := range []string{"enum: action", "type: action is not a string", "required: action missing", "additionalProperties"} {
		if !strings.Contains(kinds, want) {
			t.Errorf("invalid kinds %q lack %q", kinds, want)
		}
	}

	capped := Enumerate(schema, 4)
	if len(capped.Valid) != 4 || !capped.Capped {
		t.Errorf("max 4: %d variants, capped %v", len(capped.Valid), capped.Capped)
	}
}

func TestNameProblem(t *testing.T) {
	for name, bad := range map[string]bool{
		"get_me": false, "admin.tools.list": false, "DATA-export_v2": false,
		"": true, "bad name": true, "user/profile": true, "naïve": true, strings.Repeat("a", 129): true,
	} {
		if got := nameProblem(name) != ""; got != bad {
			t.Errorf("nameProblem(%q) = %q, want bad %v", name, nameProblem(name), bad)
		}
	}
}

func TestLeadingVerb(t *testing.T) {
	for name, want := range map[string]string{
		"get_me": "get", "getUser": "get", "github__delete-file": "delete", "fs.list_dir": "list", "Search": "search",
	} {
		if got := leadingVerb(name); got != want {
			t.Errorf("leadingVerb(%q) = %q, want %q", name, got, want)
		}
	}
}

// catalog is a small catalog with one defect per static check.
const catalog = `{
  "server": {"name": "defects", "version": "1"},
  "tools": [
    {"name": "ok_read", "description": "reads", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true}},
    {"name": "bad name!", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
    {"name": "undocumented", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
    {"name": "stringly", "description": "d", "inputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}},
    {"name": "bare", "description": "d", "inputSchema": {"type": "object"}},
    {"name": "patch_record", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": true}},
    {"name": "wipe", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}},
    {"name": "hinted", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
     "_meta": {"mcp.dev/effect": "explode"}},
    {"name": "liar", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
     "_meta": {"mcp.dev/effect": "delete"}},
    {"name": "delete_all", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
    {"name": "get_thing", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false, "destructiveHint": false}}
  ]
}`

func TestCatalogChecks(t *testing.T) {
	target, err := ParseCatalog([]byte(catalog))
	if err != nil {
		t.Fatal(err)
	}
	r := Run(target, nil)
	got := map[string][]string{}
	for _, f := range r.Findings {
		got[f.Tool] = append(got[f.Tool], f.Check)
	}
	want := map[string][]string{
		"bad name!":    {CheckToolName},
		"undocumented": {CheckDescriptionMissing},
		"stringly":     {CheckInputSchemaObject},
		"bare":         {CheckNoAnnotations},
		"patch_record": {CheckDestructiveImplicit},
		"wipe":         {CheckDestructiveUnconfirmed},
		"hinted":       {CheckHintInvalid},
		"liar":         {CheckHintContradiction},
		"delete_all":   {CheckReadOnlyWriteName},
		"get_thing":    {CheckReadNameNotReadOnly},
	}
	for tool, checks := range want {
		if !slices.Equal(got[tool], checks) {
			t.Errorf("%s: findings %v, want %v", tool, got[tool], checks)
		}
	}
	if len(got["ok_read"]) > 0 {
		t.Errorf("ok_read: findings %v, want none", got["ok_read"])
	}
	for _, f := range r.Findings {
		if f.Line == 0 {
			t.Errorf("%s %s: no line", f.Tool, f.Check)
		}
	}
	if f := r.Findings[0]; f.Tool != "bad name!" || f.Line != 6 {
		t.Errorf("first finding %s at line %d, want bad name! at line 6", f.Tool, f.Line)
	}
}

func TestConfig(t *testing.T) {
	target, err := ParseCatalog([]byte(catalog))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig([]byte(`{"ignore": [
		{"check": "no-annotations", "tool": "bare", "reason": "a fixture"},
		{"check": "description-missing", "tool": "*", "reason": "every tool"},
		{"check": "tool-name", "tool": "nobody", "reason": "unused"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := Run(target, cfg)
	for _, f := range r.Findings {
		if f.Check == CheckNoAnnotations || f.Check == CheckDescriptionMissing {
			t.Errorf("%s on %s not silenced", f.Check, f.Tool)
		}
	}
	if len(r.Suppressed) != 2 || r.Suppressed[0].Suppressed == "" {
		t.Errorf("suppressed = %+v", r.Suppressed)
	}
	if len(r.UnusedIgnores) != 1 || r.UnusedIgnores[0].Tool != "nobody" {
		t.Errorf("unused = %+v", r.UnusedIgnores)
	}

	for _, bad := range []string{
		`{"ignore": [{"check": "no-such-check", "tool": "x", "reason": "r"}]}`,
		`{"ignore": [{"check": "no-annotations", "tool": "x"}]}`,
		`{"ignore": [{"check": "no-annotations", "tool": "x", "reason": "r", "until": "never"}]}`,
		`ignore: []`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s) succeeded", bad)
		}
	}
}

// TestSARIF checks the SARIF output against the required properties of
// the SARIF 2.1.0 schema (sarif-schema-2.1.0.json) for every object lint
// writes, and its enumerations.
func TestSARIF(t *testing.T) {
	target, err := ParseCatalog([]byte(catalog))
	if err != nil {
		t.Fatal(err)
	}
	target.Source = "catalog.json"
	cfg, _ := ParseConfig([]byte(`{"ignore": [{"check": "no-annotations", "tool": "bare", "reason": "a fixture"}]}`))
	var buf bytes.Buffer
	if err := Run(target, cfg).WriteSARIF(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	ValidateSARIF(t, buf.Bytes(), 10)
}

// ValidateSARIF fails t if data is not a SARIF 2.1.0 log with the required
// properties of the schema (sarifLog: version, runs; run: tool; tool:
// driver; toolComponent: name; reportingDescriptor: id;
// multiformatMessageString: text; result: message; message: text or id;
// artifactLocation: uri or index; region: a start; suppression: kind), its
// enumerations (result.level, suppression.kind,
// defaultConfiguration.level) and consistent ruleIndex. wantResults is
// the number of results, -1 for any.
func ValidateSARIF(t testing.TB, data []byte, wantResults int) {
	t.Helper()
	var log map[string]any
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	req := func(obj map[string]any, where string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s: required property %q missing", where, k)
			}
		}
	}
	obj := func(v any, where string) map[string]any {
		t.Helper()
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object: %v", where, v)
		}
		return m
	}
	arr := func(v any, where string) []any {
		t.Helper()
		a, ok := v.([]any)
		if !ok {
			t.Fatalf("%s: not an array: %v", where, v)
		}
		return a
	}
	message := func(v any, where string) {
		t.Helper()
		m := obj(v, where)
		if _, text := m["text"]; !text {
			if _, id := m["id"]; !id {
				t.Errorf("%s: message has neither text nor id", where)
			}
		}
	}
	req(log, "sarifLog", "version", "runs")
	if log["version"] != "2.1.0" {
		t.Errorf("version = %v", log["version"])
	}
	if s, _ := log["$schema"].(string); !strings.Contains(s, "sarif") {
		t.Errorf("$schema = %q", s)
	}
	levels := []any{"none", "note", "warning", "error"}
	for i, rv := range arr(log["runs"], "runs") {
		run := obj(rv, "run")
		req(run, "run", "tool")
		tool := obj(run["tool"], "run.tool")
		req(tool, "tool", "driver")
		driver := obj(tool["driver"], "tool.driver")
		req(driver, "toolComponent", "name")
		rules := arr(driver["rules"], "driver.rules")
		ids := []string{}
		for j, rv := range rules {
			rule := obj(rv, "rule")
			req(rule, "reportingDescriptor", "id")
			ids = append(ids, rule["id"].(string))
			for _, k := range []string{"shortDescription", "fullDescription", "help"} {
				if v, ok := rule[k]; ok {
					req(obj(v, k), "multiformatMessageString "+k, "text")
				}
			}
			if dc, ok := rule["defaultConfiguration"]; ok {
				if !slices.Contains(levels, obj(dc, "defaultConfiguration")["level"]) {
					t.Errorf("rule %d: defaultConfiguration.level %v", j, obj(dc, "")["level"])
				}
			}
		}
		results := arr(run["results"], "run.results")
		if wantResults >= 0 && len(results) != wantResults {
			t.Errorf("run %d: %d results, want %d", i, len(results), wantResults)
		}
		for j, resv := range results {
			res := obj(resv, "result")
			req(res, "result", "message")
			message(res["message"], "result.message")
			if l, ok := res["level"]; ok && !slices.Contains(levels, l) {
				t.Errorf("result %d: level %v", j, l)
			}
			if idx, ok := res["ruleIndex"].(float64); ok {
				if int(idx) >= len(ids) || ids[int(idx)] != res["ruleId"] {
					t.Errorf("result %d: ruleIndex %v does not point at ruleId %v", j, idx, res["ruleId"])
				}
			}
			if locs, ok := res["locations"]; ok {
				for _, lv := range arr(locs, "locations") {
					loc := obj(lv, "location")
					if pl, ok := loc["physicalLocation"]; ok {
						al := obj(obj(pl, "physicalLocation")["artifactLocation"], "artifactLocation")
						if _, ok := al["uri"]; !ok {
							t.Errorf("result %d: artifactLocation without uri", j)
						}
						if rg, ok := obj(pl, "")["region"]; ok {
							if sl, _ := obj(rg, "region")["startLine"].(float64); sl < 1 {
								t.Errorf("result %d: region.startLine %v", j, sl)
							}
						}
					}
					for _, ll := range arr(orEmpty(loc["logicalLocations"]), "logicalLocations") {
						if _, ok := obj(ll, "logicalLocation")["name"]; !ok {
							t.Errorf("result %d: logical location without name", j)
						}
					}
				}
			}
			if sup, ok := res["suppressions"]; ok {
				for _, sv := range arr(sup, "suppressions") {
					s := obj(sv, "suppression")
					req(s, "suppression", "kind")
					if k := s["kind"]; k != "inSource" && k != "external" {
						t.Errorf("result %d: suppression kind %v", j, k)
					}
				}
			}
		}
	}
}

func orEmpty(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}
