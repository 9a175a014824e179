package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/hints"
)

// decideCall is a routed and resolved tools/call of tool on server files.
func decideCall(tool string, ann preflight.Annotations, h hints.Hints, args string) *pipeline.Call {
	c := &pipeline.Call{Method: "tools/call", Name: tool, Target: tool, Client: &pipeline.Client{Principal: "alice"},
		Tool:       &catalog.Tool{Name: tool, Upstream: "files", Tool: &mcp.Tool{Name: tool}},
		Resolution: &pipeline.Resolution{Source: "upstream"}}
	c.Resolution.Annotations, c.Resolution.Hints = ann, h
	if args != "" {
		c.Arguments = json.RawMessage(args)
	}
	return c
}

var (
	readAnn    = preflight.Annotations{ReadOnlyHint: true}
	writeAnn   = preflight.Annotations{ReadOnlyHint: false, DestructiveHint: false}
	destroyAnn = preflight.Annotations{ReadOnlyHint: false, DestructiveHint: true}
)

// TestDecideDefaults: read and write allowed; destructive, delete and
// requiresConfirmation confirmed, each with its reason.
func TestDecideDefaults(t *testing.T) {
	d, err := pipeline.NewDecider(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ann     preflight.Annotations
		h       hints.Hints
		verdict pipeline.Verdict
		reason  string
	}{
		{"read", readAnn, hints.Hints{}, pipeline.Allow, "the call only reads"},
		{"write", writeAnn, hints.Hints{}, pipeline.Allow, "the call changes data but does not delete or destroy it"},
		{"external", writeAnn, hints.Hints{Effect: hints.EffectExternal}, pipeline.Allow, "the call acts outside this system"},
		{"destructive", destroyAnn, hints.Hints{}, pipeline.Confirm, "the call is destructive (destructiveHint, from this call's resolution)"},
		{"delete", writeAnn, hints.Hints{Effect: hints.EffectDelete}, pipeline.Confirm, "the call deletes (effect delete, from this call's resolution)"},
		{"requiresConfirmation", writeAnn, hints.Hints{RequiresConfirmation: hints.Bool(true)}, pipeline.Confirm, "the call requires confirmation (requiresConfirmation, from this call's resolution)"},
	} {
		got := d.Decide(decideCall("t", tc.ann, tc.h, ""))
		if got.Verdict != tc.verdict || !strings.HasPrefix(got.Reason, tc.reason) || got.Rule != "" || got.DryRun || got.OutOfBand {
			t.Errorf("%s: %+v, want %s %q", tc.name, got, tc.verdict, tc.reason)
		}
	}
}

// TestDecideRules: the first matching rule decides, over server, tool,
// args, effect and principal; a rule that cannot be evaluated denies; the
// server's mode overrides the gateway's.
func TestDecideRules(t *testing.T) {
	d, err := pipeline.NewDecider(&pipeline.DecideOptions{
		Mode:    pipeline.DryRun,
		Servers: map[string]pipeline.Mode{"files": pipeline.Enforce},
		Rules: []pipeline.DecisionRule{
			{Name: "other-server", Servers: []string{"github"}, Verdict: pipeline.Deny},
			{Name: "bob", When: `principal == "bob"`, Verdict: pipeline.Deny, Reason: "bob may not"},
			{Name: "tmp", Tools: []string{"delete_*"}, When: `args.path.startsWith("tmp/")`, Verdict: pipeline.Allow},
			{Name: "writes", When: `effect == "write" && server == "files" && tool == "write_file"`, Verdict: pipeline.Confirm, OutOfBand: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, c *pipeline.Call, verdict pipeline.Verdict, rule, reason string, oob bool) {
		t.Helper()
		got := d.Decide(c)
		if got.Verdict != verdict || got.Rule != rule || !strings.Contains(got.Reason, reason) || got.OutOfBand != oob || got.DryRun {
			t.Errorf("%s: %+v, want %s by %q (%q)", name, got, verdict, rule, reason)
		}
	}
	check("tmp", decideCall("delete_file", destroyAnn, hints.Hints{}, `{"path":"tmp/x"}`), pipeline.Allow, "tmp", `the deployer's rule "tmp"`, false)
	check("not tmp", decideCall("delete_file", destroyAnn, hints.Hints{}, `{"path":"src/x"}`), pipeline.Confirm, "", "destructive", false)
	check("missing argument", decideCall("delete_file", destroyAnn, hints.Hints{}, `{}`), pipeline.Deny, "tmp", `the decision rule "tmp" could not be evaluated`, false)
	check("repeated key", decideCall("delete_file", destroyAnn, hints.Hints{}, `{"path":"tmp/x","path":"src"}`), pipeline.Deny, "tmp", "repeats a key", false)
	check("effect", decideCall("write_file", writeAnn, hints.Hints{}, `{}`), pipeline.Confirm, "writes", "", true)
	c := decideCall("read_file", readAnn, hints.Hints{}, "")
	c.Client.Principal = "bob"
	check("principal", c, pipeline.Deny, "bob", "bob may not", false)

	other := decideCall("read_file", readAnn, hints.Hints{}, "")
	other.Tool.Upstream = "github"
	if got := d.Decide(other); got.Verdict != pipeline.Deny || got.Rule != "other-server" || !got.DryRun {
		t.Errorf("other server: %+v", got)
	}
}

// TestNewDeciderErrors names each bad rule and what is wrong.
func TestNewDeciderErrors(t *testing.T) {
	_, err := pipeline.NewDecider(&pipeline.DecideOptions{
		Mode: "sometimes",
		Rules: []pipeline.DecisionRule{
			{Verdict: pipeline.Allow},
			{Name: "a", Verdict: "maybe"},
			{Name: "a", Verdict: pipeline.Deny, OutOfBand: true},
			{Name: "b", Verdict: pipeline.Allow, Tools: []string{"[x"}},
			{Name: "c", Verdict: pipeline.Allow, When: "args.x +"},
			{Name: "d", Verdict: pipeline.Allow, When: "effect"},
		},
	})
	for _, want := range []string{
		`mode: "sometimes" is not a mode (allowed: enforce, dry-run)`,
		`rules[0]: a name is required`,
		`rules[1] ("a"): decision "maybe": allowed: allow, confirm, deny`,
		`rules[2] ("a"): the name is used twice`,
		`rules[2] ("a"): out-of-band approval goes with the decision confirm, not deny`,
		`rules[3] ("b"): "[x" is not a glob pattern`,
		`rules[4] ("c"): when: expression does not compile`,
		`rules[5] ("d"): when: expression is of type string, not bool`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestConfirmedGuard refuses a denied call and an unconfirmed one (an
// in-band confirmation does not satisfy an out-of-band decision), and
// passes dry-run, allowed and confirmed calls.
func TestConfirmedGuard(t *testing.T) {
	forwarded := 0
	h := pipeline.Chain(pipeline.HandlerFunc(func(context.Context, *pipeline.Call) (mcp.Result, error) {
		forwarded++
		return &mcp.CallToolResult{}, nil
	}), pipeline.Confirmed())
	for _, tc := range []struct {
		name    string
		d       *pipeline.Decision
		conf    *pipeline.Confirmation
		forward bool
		text    string
	}{
		{"no decision", nil, nil, true, ""},
		{"allow", &pipeline.Decision{Verdict: pipeline.Allow}, nil, true, ""},
		{"dry-run deny", &pipeline.Decision{Verdict: pipeline.Deny, DryRun: true}, nil, true, ""},
		{"deny", &pipeline.Decision{Verdict: pipeline.Deny, Reason: "no"}, nil, false, "The gateway refused the call of t on server files: no."},
		{"unconfirmed", &pipeline.Decision{Verdict: pipeline.Confirm, Reason: "why"}, nil, false, "needs confirmation (why), and this client cannot be asked"},
		{"confirmed", &pipeline.Decision{Verdict: pipeline.Confirm}, &pipeline.Confirmation{By: "client"}, true, ""},
		{"in band for out of band", &pipeline.Decision{Verdict: pipeline.Confirm, OutOfBand: true, Reason: "merges"}, &pipeline.Confirmation{By: "client"}, false, "needs a person's approval out of band (merges)"},
		{"approved on the page", &pipeline.Decision{Verdict: pipeline.Confirm, OutOfBand: true}, &pipeline.Confirmation{By: "page"}, true, ""},
	} {
		forwarded = 0
		c := decideCall("t", readAnn, hints.Hints{}, "")
		c.Decision, c.Confirmation = tc.d, tc.conf
		res, err := h.Serve(context.Background(), c)
		if err != nil || (forwarded == 1) != tc.forward {
			t.Errorf("%s: forwarded %d, %v", tc.name, forwarded, err)
			continue
		}
		if !tc.forward {
			r := res.(*mcp.CallToolResult)
			if !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, tc.text) || c.Outcome != "denied" {
				t.Errorf("%s: %+v outcome %q", tc.name, r.Content[0], c.Outcome)
			}
		}
	}
}

// FuzzConfirmAnswer decodes inputResponses as the SDK does and reads the
// confirmation's answer: never a panic, and "accept" only for an accepted
// form whose confirm field is true.
func FuzzConfirmAnswer(f *testing.F) {
	for _, s := range []string{
		`{"preflight/confirm":{"action":"accept","content":{"confirm":true}}}`,
		`{"preflight/confirm":{"action":"accept","content":{"confirm":"true"}}}`,
		`{"preflight/confirm":{"action":"accept"}}`,
		`{"preflight/confirm":{"action":"decline"}}`,
		`{"preflight/confirm":{"action":"cancel"}}`,
		`{"preflight/confirm":{"action":"maybe"}}`,
		`{"preflight/confirm":{"roots":[]}}`,
		`{"preflight/confirm":{"role":"assistant","content":{"type":"text","text":"x"}}}`,
		`{"other":{"action":"accept","content":{"confirm":true}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m mcp.InputResponseMap
		if json.Unmarshal(data, &m) != nil {
			return
		}
		action, err := pipeline.ConfirmAnswer(m[pipeline.ConfirmKey])
		if err != nil {
			if action != "" {
				t.Fatalf("error %v with action %q", err, action)
			}
			return
		}
		e, _ := m[pipeline.ConfirmKey].(*mcp.ElicitResult)
		switch action {
		case "accept":
			if e == nil || e.Action != "accept" || e.Content["confirm"] != true {
				t.Fatalf("accepted %s", data)
			}
		case "decline", "cancel":
		default:
			t.Fatalf("action %q", action)
		}
	})
}

// BenchmarkDecide measures the decision on an allowed read, without rules
// and with 20 rules of which two are evaluated (the others name another
// server): go test -run '^$' -bench BenchmarkDecide -benchmem ./pipeline/
func BenchmarkDecide(b *testing.B) {
	var rules []pipeline.DecisionRule
	for i := range 18 {
		rules = append(rules, pipeline.DecisionRule{Name: fmt.Sprintf("github-%d", i), Servers: []string{"github"},
			Tools: []string{fmt.Sprintf("tool_%d*", i)}, When: `args.force == true`, Verdict: pipeline.Deny})
	}
	rules = append(rules,
		pipeline.DecisionRule{Name: "blocked", When: `principal == "blocked"`, Verdict: pipeline.Deny},
		pipeline.DecisionRule{Name: "deletes", When: `effect == "delete" && server != "scratch"`, Verdict: pipeline.Confirm, OutOfBand: true})
	for _, tc := range []struct {
		name  string
		rules []pipeline.DecisionRule
	}{{"rules=0", nil}, {"rules=20", rules}} {
		b.Run(tc.name, func(b *testing.B) {
			d, err := pipeline.NewDecider(&pipeline.DecideOptions{Rules: tc.rules})
			if err != nil {
				b.Fatal(err)
			}
			c := decideCall("read_file", readAnn, hints.Hints{}, `{"path":"a"}`)
			b.ReportAllocs()
			for b.Loop() {
				if d.Decide(c).Verdict != pipeline.Allow {
					b.Fatal("not allowed")
				}
			}
		})
	}
}
