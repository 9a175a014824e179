package page

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
)

// TestPageReasonWords: every reason the gateway's decide stage gives (as
// gateway/internal/stage/decide.go words them, from each source), and the
// audit stage's "rule NAME", reads as a plain sentence that says what the
// gateway does and names what the call acts on when it is known; the
// reason as given stays beside it. A deployer's own reason is shown as
// written, after what the gateway does.
func TestPageReasonWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		verdict, reason, target string
		plain, technical        string
	}{
		{"confirm", "the call deletes (effect delete, from the tool's declaration)", "notes.txt",
			"Asks first: this call deletes notes.txt.", "the call deletes (effect delete, from the tool's declaration)"},
		{"confirm", "the call deletes (effect delete, from this call's resolution)", "",
			"Asks first: this call deletes data.", "the call deletes (effect delete, from this call's resolution)"},
		{"confirm", "the call is destructive (destructiveHint, from the protocol's defaults)", "report.csv",
			"Asks first: this call can overwrite or destroy report.csv.", "the call is destructive (destructiveHint, from the protocol's defaults)"},
		{"confirm", "the call is destructive (destructiveHint, from derived from the annotations)", "",
			"Asks first: this call can overwrite or destroy data.", "the call is destructive (destructiveHint, from derived from the annotations)"},
		{"confirm", "the call requires confirmation (requiresConfirmation, from the tool's declaration)", "",
			"Asks first: the tool wants a person to confirm this call.", "the call requires confirmation (requiresConfirmation, from the tool's declaration)"},
		{"confirm", "the call requires confirmation (requiresConfirmation, from the deployer's override)", "main",
			"Asks first: the tool wants a person to confirm this call on main.", "the call requires confirmation (requiresConfirmation, from the deployer's override)"},
		{"allow", "the call only reads", "notes.txt", "Allowed: this call only reads notes.txt.", "the call only reads"},
		{"allow", "the call only reads", "", "Allowed: this call only reads.", "the call only reads"},
		{"allow", "the call changes data but does not delete or destroy it", "notes.txt",
			"Allowed: this call changes notes.txt but deletes nothing.", "the call changes data but does not delete or destroy it"},
		{"allow", "the call changes data but does not delete or destroy it", "",
			"Allowed: this call changes data but deletes nothing.", "the call changes data but does not delete or destroy it"},
		{"allow", "the call acts outside this system but does not delete or destroy anything", "https://example.com/",
			"Allowed: this call reaches outside this system (https://example.com/) but deletes nothing.",
			"the call acts outside this system but does not delete or destroy anything"},
		{"allow", "the call acts outside this system but does not delete or destroy anything", "",
			"Allowed: this call reaches outside this system but deletes nothing.",
			"the call acts outside this system but does not delete or destroy anything"},
		{"deny", `the deployer's rule "no-prod-deletes"`, "x", "Refused: the gateway's rule “no-prod-deletes” says so.", `the deployer's rule "no-prod-deletes"`},
		{"confirm", `the deployer's rule "say \"please\""`, "", "Asks first: the gateway's rule “say \"please\"” says so.", `the deployer's rule "say \"please\""`},
		{"allow", "rule reads-ok", "", "Allowed: the gateway's rule “reads-ok” says so.", "rule reads-ok"},
		{"deny", `the decision rule "big" reads the arguments, which cannot be read: arguments: 70000 bytes, more than 65536`, "",
			"Refused: the gateway's rule “big” could not read this call's arguments.",
			`the decision rule "big" reads the arguments, which cannot be read: arguments: 70000 bytes, more than 65536`},
		{"deny", `the decision rule "paths" could not be evaluated (no such key: path); read optional arguments with has(args.x)`, "",
			"Refused: the gateway's rule “paths” could not be evaluated for this call.",
			`the decision rule "paths" could not be evaluated (no such key: path); read optional arguments with has(args.x)`},
		// A deployer's own words stay theirs.
		{"confirm", "deletes in production need a person", "prod.db", "Asks first: deletes in production need a person.", ""},
		{"deny", "Not on Fridays!", "", "Refused: Not on Fridays!", ""},
		{"", "drops a table", "", "Drops a table.", ""},
		{"confirm", "  ", "x", "", ""},
	} {
		got := explain(tc.verdict, tc.reason, tc.target)
		if got.Plain != tc.plain || got.Technical != tc.technical {
			t.Errorf("explain(%q, %q, %q) = %+v\nwant plain %q, technical %q", tc.verdict, tc.reason, tc.target, got, tc.plain, tc.technical)
		}
		if strings.Contains(got.Plain, "Hint") || strings.Contains(got.Plain, "requiresConfirmation") || strings.Contains(got.Plain, "effect delete") {
			t.Errorf("explain(%q) keeps the jargon: %q", tc.reason, got.Plain)
		}
	}
}

// TestPageReasonTargets: the sentence names what the call acts on from the
// arguments shown (never a withheld one, nor an object), with the end of
// a long path kept and control, format (bidirectional, zero-width) and
// separator characters and invalid UTF-8 escaped.
func TestPageReasonTargets(t *testing.T) {
	t.Parallel()
	long := "projects/2026/quarterly-reports/finance/departments/engineering/config/overrides.yaml"
	for _, tc := range []struct {
		args []approval.Arg
		want string
	}{
		{[]approval.Arg{{Name: "action", Value: "delete"}, {Name: "path", Value: "notes.txt"}}, "notes.txt"},
		{[]approval.Arg{{Name: "name", Value: "x"}, {Name: "Path", Value: "a/b"}}, "a/b"},
		{[]approval.Arg{{Name: "path", Withheld: true}, {Name: "url", Value: "https://e.example/"}}, "https://e.example/"},
		{[]approval.Arg{{Name: "path", Value: `{"a":1}`}}, ""},
		{[]approval.Arg{{Name: "content", Value: "hello"}}, ""},
		{[]approval.Arg{{Name: "path", Value: long}}, "projects/2026/quarterly-…s/engineering/config/overrides.yaml"},
		{[]approval.Arg{{Name: "path", Value: strings.Repeat("a", 70), Clipped: true}}, strings.Repeat("a", 59) + "…"},
		{[]approval.Arg{{Name: "path", Value: "evil\u202etxt.exe"}}, `evil\u202etxt.exe`},
		{[]approval.Arg{{Name: "path", Value: "ad\u200bmin/\U000e0041\x1b\xff"}}, `ad\u200bmin/\U000e0041\u001b\xff`},
	} {
		if got := requestTarget(tc.args); got != tc.want {
			t.Errorf("requestTarget(%+v) = %q, want %q", tc.args, got, tc.want)
		}
	}
	for args, want := range map[string]string{
		`{"action":"delete","path":"notes.txt"}`:     "notes.txt",
		`{"token":"[withheld]","path":"[withheld]"}`: "",
		`{"path":["a","b"],"table":"users"}`:         "users",
		`not json`:                                   "",
		``:                                           "",
	} {
		if got := recordTarget(json.RawMessage(args)); got != want {
			t.Errorf("recordTarget(%s) = %q, want %q", args, got, want)
		}
	}
	r := &audit.Record{Decision: audit.Confirm, Reason: "the call deletes (effect delete, from the tool's declaration)",
		Args: json.RawMessage(`{"path":"notes.txt"}`)}
	if got := recordReason(r).Plain; got != "Asks first: this call deletes notes.txt." {
		t.Errorf("recordReason = %q", got)
	}
	q := &approval.Request{Reason: "the call is destructive (destructiveHint, from the tool's declaration)",
		Args: []approval.Arg{{Name: "path", Value: "README.md"}}}
	if got := requestReason(q).Plain; got != "Asks first: this call can overwrite or destroy README.md." {
		t.Errorf("requestReason = %q", got)
	}
}

// TestPageFold: an audit row's text keeps its lines, escapes control and
// format characters, and shows its head, clipped on a rune boundary, with
// the whole behind it.
func TestPageFold(t *testing.T) {
	t.Parallel()
	v := fold("a\tb\nc\u200b\u202e\x1b[2J\xff", 100)
	if want := "a\tb\nc\\u200b\\u202e\\u001b[2J\\xff"; v.Head != want || v.All != "" {
		t.Errorf("fold = %+v, want head %q", v, want)
	}
	v = fold(json.RawMessage(strings.Repeat("é", 10)), 5)
	if v.Head != "éé…" || v.All != strings.Repeat("é", 10) || v.Bytes != 20 {
		t.Errorf("fold = %+v", v)
	}
}
