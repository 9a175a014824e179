package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// sarifSchemaFile is the official SARIF 2.1.0 schema (OASIS, errata 01),
// kept with its source and licence in testdata/sarif at the repository root.
var sarifSchemaFile = filepath.Join("..", "..", "..", "..", "..", "testdata", "sarif", "sarif-schema-2.1.0.json")

var sarifSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := os.Open(sarifSchemaFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // uri, uri-reference and date-time are checked, not only noted
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// validateSARIF fails t unless out is a SARIF log valid against the
// official schema whose results point at their rules consistently (a
// ruleIndex is the index of the rule named by ruleId, which the schema
// cannot say). It returns the number of results.
func validateSARIF(t *testing.T, out string) int {
	t.Helper()
	if err := checkSARIF(out); err != nil {
		t.Fatalf("SARIF output is not valid: %v\n%s", err, out)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex *int   `json:"ruleIndex"`
			} `json:"results"`
		} `json:"runs"`
	}
	decodeJSON(t, out, &log)
	n := 0
	for _, run := range log.Runs {
		rules := run.Tool.Driver.Rules
		for i, r := range run.Results {
			if r.RuleIndex == nil || *r.RuleIndex >= len(rules) || rules[*r.RuleIndex].ID != r.RuleID {
				t.Errorf("result %d: ruleIndex %v does not point at rule %q", i, r.RuleIndex, r.RuleID)
			}
		}
		n += len(run.Results)
	}
	return n
}

// checkSARIF validates out against the official schema.
func checkSARIF(out string) error {
	sch, err := sarifSchema()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// TestLintSARIFSchema validates what lint -format sarif writes against the
// official SARIF 2.1.0 JSON Schema: for every shared catalog, for a
// catalog whose path needs escaping in a URI with a configuration that
// suppresses a finding, and for a live server whose resolutions break
// their bounds (results with arguments in their properties).
func TestLintSARIFSchema(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(catalogsDir(t), "*.json"))
	results := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := runMain(t, "lint", "-severity", "info", "-format", "sarif", f)
			if code != exitOK && code != exitFailure {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			results += validateSARIF(t, out)
		})
	}
	if results == 0 {
		t.Errorf("no results in %d catalogs: the schema checked no result", len(files))
	}

	t.Run("escaped path and suppression", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "my tools#1")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cat := filepath.Join(dir, "tools 100%.json")
		writeFile(t, cat, `{"tools": [
  {"name": "wipe", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}},
  {"name": "bare", "description": "d", "inputSchema": {"type": "object"}}]}`)
		cfg := filepath.Join(dir, "lint.json")
		writeFile(t, cfg, `{"ignore": [{"check": "destructive-unconfirmed", "tool": "wipe", "reason": "confirmed by the client"}]}`)
		code, out, errOut := runMain(t, "lint", "-config", cfg, "-severity", "info", "-format", "sarif", cat)
		if code != exitOK && code != exitFailure {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		validateSARIF(t, out)
		if !strings.Contains(out, `"suppressions"`) {
			t.Errorf("no suppressed result:\n%s", out)
		}
	})

	t.Run("live server", func(t *testing.T) {
		url := defectServer(t, defectOptions{extCapability: true, seedCapability: true, markers: true})
		code, out, errOut := runMain(t, "lint", "-url", url, "-severity", "info", "-format", "sarif")
		if code != exitFailure {
			t.Fatalf("exit %d, want 1\n%s", code, errOut)
		}
		validateSARIF(t, out)
		if !strings.Contains(out, `"arguments"`) {
			t.Errorf("no result of a resolution:\n%s", out)
		}
	})
}

// TestSARIFSchemaRejects shows the validation can fail: each change to a
// valid log breaks a rule of the schema and is refused.
func TestSARIFSchemaRejects(t *testing.T) {
	t.Parallel()
	cat := filepath.Join("testdata", "lint-catalog.json")
	_, valid, _ := runMain(t, "lint", "-severity", "info", "-format", "sarif", cat)
	if err := checkSARIF(valid); err != nil {
		t.Fatalf("the unchanged log is not valid: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(log map[string]any)
	}{
		{"version 2.0.0", func(l map[string]any) { l["version"] = "2.0.0" }},
		{"no runs", func(l map[string]any) { delete(l, "runs") }},
		{"tool without a driver name", func(l map[string]any) { delete(driver(l), "name") }},
		{"rule without an id", func(l map[string]any) { delete(driver(l)["rules"].([]any)[0].(map[string]any), "id") }},
		{"level fatal", func(l map[string]any) { firstResult(l)["level"] = "fatal" }},
		{"result without a message", func(l map[string]any) { delete(firstResult(l), "message") }},
		{"message without text or id", func(l map[string]any) { firstResult(l)["message"] = map[string]any{} }},
		{"negative ruleIndex", func(l map[string]any) { firstResult(l)["ruleIndex"] = -2 }},
		{"unknown result property", func(l map[string]any) { firstResult(l)["severity"] = "high" }},
		{"suppression kind", func(l map[string]any) {
			firstResult(l)["suppressions"] = []any{map[string]any{"kind": "ignored"}}
		}},
		{"region startLine 0", func(l map[string]any) {
			firstResult(l)["locations"] = []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": "c.json"}, "region": map[string]any{"startLine": 0}}}}
		}},
		{"artifact uri with a bare %", func(l map[string]any) {
			firstResult(l)["locations"] = []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": "tools 100%.json"}}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log map[string]any
			decodeJSON(t, valid, &log)
			tc.change(log)
			b, err := json.Marshal(log)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkSARIF(string(bytes.TrimSpace(b))); err == nil {
				t.Errorf("accepted:\n%s", b)
			}
		})
	}
}

func driver(log map[string]any) map[string]any {
	run := log["runs"].([]any)[0].(map[string]any)
	return run["tool"].(map[string]any)["driver"].(map[string]any)
}

func firstResult(log map[string]any) map[string]any {
	run := log["runs"].([]any)[0].(map[string]any)
	return run["results"].([]any)[0].(map[string]any)
}
