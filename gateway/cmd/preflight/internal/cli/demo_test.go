package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
)

var eras = []string{preflight.ProtocolStateless, preflight.ProtocolLegacy}

// tableRows returns the rows of the first table in out (the block that
// starts with a line beginning with header), keyed by their first column,
// each mapped from column name to cell.
func tableRows(t *testing.T, out, header string) map[string]map[string]string {
	t.Helper()
	sep := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), header) {
			continue
		}
		cols := sep.Split(strings.TrimSpace(l), -1)
		rows := map[string]map[string]string{}
		for _, l := range lines[i+1:] {
			if strings.TrimSpace(l) == "" {
				break
			}
			cells := sep.Split(strings.TrimSpace(l), -1)
			if len(cells) != len(cols) {
				t.Fatalf("row %q has %d cells, header has %d", l, len(cells), len(cols))
			}
			row := map[string]string{}
			for j, c := range cols {
				row[c] = cells[j]
			}
			rows[cells[0]] = row
		}
		return rows
	}
	t.Fatalf("no table with header %q in:\n%s", header, out)
	return nil
}

func TestDemoText(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			code, out, errOut := runMain(t, "demo", "-era", era)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			rows := tableRows(t, out, "ACTION")
			want := map[string]map[string]string{
				"read":    {"STATIC": "-- d - --", "RESOLVED": "ro - i --", "EFFECT": "read", "CONFIRM?": "no", "RETRY?": "yes", "RESULT": `"hello from preflight"`},
				"append":  {"STATIC": "-- d - --", "RESOLVED": "-- - - --", "EFFECT": "write", "CONFIRM?": "no", "RETRY?": "no", "RESULT": "appended 14 bytes: notes.txt"},
				"replace": {"STATIC": "-- d - --", "RESOLVED": "-- d i --", "EFFECT": "write", "CONFIRM?": "yes, auto-approved", "RETRY?": "yes", "RESULT": "replaced 9 bytes: notes.txt"},
				"delete":  {"STATIC": "-- d - --", "RESOLVED": "-- d i --", "EFFECT": "delete", "CONFIRM?": "yes, auto-approved", "RETRY?": "yes", "RESULT": "deleted: notes.txt"},
			}
			if len(rows) != len(want) {
				t.Errorf("table has rows %v, want %d", rows, len(want))
			}
			for action, cells := range want {
				for col, v := range cells {
					if got := rows[action][col]; got != v {
						t.Errorf("%s %s = %q, want %q", action, col, got, v)
					}
				}
			}
			if !strings.Contains(out, "protocol "+era) {
				t.Errorf("output does not name protocol %s:\n%s", era, out)
			}
			golden(t, "demo-"+era+".golden", out)
		})
	}
}

func TestDemoJSON(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			code, out, errOut := runMain(t, "demo", "-json", "-era", era)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			var rep struct {
				ProtocolVersion string `json:"protocolVersion"`
				Static          struct {
					Annotations       preflight.Annotations `json:"annotations"`
					Resolvable        bool                  `json:"resolvable"`
					NeedsConfirmation bool                  `json:"needsConfirmation"`
				} `json:"static"`
				Steps []struct {
					Action   string `json:"action"`
					Decision struct {
						Resolved          bool   `json:"resolved"`
						Shape             string `json:"shape"`
						NeedsConfirmation bool   `json:"needsConfirmation"`
						SafeToRetry       bool   `json:"safeToRetry"`
						Effective         struct {
							ReadOnly struct {
								Value  bool   `json:"value"`
								Source string `json:"source"`
							} `json:"readOnlyHint"`
						} `json:"effective"`
					} `json:"decision"`
					AutoApproved bool `json:"autoApproved"`
					Result       struct {
						IsError bool   `json:"isError"`
						Text    string `json:"text"`
					} `json:"result"`
				} `json:"steps"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("output is not the JSON report: %v\n%s", err, out)
			}
			if rep.ProtocolVersion != era {
				t.Errorf("protocolVersion = %q, want %q", rep.ProtocolVersion, era)
			}
			if !rep.Static.Resolvable || !rep.Static.NeedsConfirmation || !rep.Static.Annotations.DestructiveHint {
				t.Errorf("static = %+v, want resolvable, destructive, needing confirmation", rep.Static)
			}
			confirm := map[string]bool{"read": false, "append": false, "replace": true, "delete": true}
			if len(rep.Steps) != len(confirm) {
				t.Fatalf("%d steps, want %d", len(rep.Steps), len(confirm))
			}
			for _, s := range rep.Steps {
				d := s.Decision
				if !d.Resolved || d.Shape != "extension" {
					t.Errorf("%s: resolved %t in shape %q, want the extension shape", s.Action, d.Resolved, d.Shape)
				}
				if d.NeedsConfirmation != confirm[s.Action] || s.AutoApproved != confirm[s.Action] {
					t.Errorf("%s: needsConfirmation %t, autoApproved %t, want %t", s.Action, d.NeedsConfirmation, s.AutoApproved, confirm[s.Action])
				}
				if ro := d.Effective.ReadOnly; ro.Value != (s.Action == "read") || ro.Source != "resolved" {
					t.Errorf("%s: readOnlyHint = %+v", s.Action, ro)
				}
				if s.Result.IsError {
					t.Errorf("%s: tool error %q", s.Action, s.Result.Text)
				}
			}
		})
	}
}
