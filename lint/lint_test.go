package lint

import (
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
