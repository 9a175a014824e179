package stage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/hints"
)

// decideCall is a routed and resolved tools/call of tool on server files.
func decideCall(tool string, ann preflight.Annotations, h hints.Hints, args string) *call.Call {
	c := &call.Call{Method: "tools/call", Name: tool, Target: tool, Client: &call.Client{Principal: "alice"},
		Tool:       &catalog.Tool{Name: tool, Upstream: "files", Tool: &mcp.Tool{Name: tool}},
		Resolution: &call.Resolution{Source: "upstream"}}
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
	d, err := stage.NewDecider(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ann     preflight.Annotations
		h       hints.Hints
		verdict call.Verdict
		reason  string
	}{
		{"read", readAnn, hints.Hints{}, call.Allow, "the call only reads"},
		{"write", writeAnn, hints.Hints{}, call.Allow, "the call changes data but does not delete or destroy it"},
		{"external", writeAnn, hints.Hints{Effect: hints.EffectExternal}, call.Allow, "the call acts outside this system"},
		{"destructive", destroyAnn, hints.Hints{}, call.Confirm, "the call is destructive (destructiveHint, from this call's resolution)"},
		{"delete", writeAnn, hints.Hints{Effect: hints.EffectDelete}, call.Confirm, "the call deletes (effect delete, from this call's resolution)"},
		{"requiresConfirmation", writeAnn, hints.Hints{RequiresConfirmation: hints.Bool(true)}, call.Confirm, "the call requires confirmation (requiresConfirmation, from this call's resolution)"},
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
	d, err := stage.NewDecider(&stage.DecideOptions{
		Mode:    stage.DryRun,
		Servers: map[string]stage.Mode{"files": stage.Enforce},
		Rules: []stage.DecisionRule{
			{Name: "other-server", Servers: []string{"github"}, Verdict: call.Deny},
			{Name: "bob", When: `principal == "bob"`, Verdict: call.Deny, Reason: "bob may not"},
			{Name: "tmp", Tools: []string{"delete_*"}, When: `args.path.startsWith("tmp/")`, Verdict: call.Allow},
			{Name: "writes", When: `effect == "write" && server == "files" && tool == "write_file"`, Verdict: call.Confirm, OutOfBand: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, c *call.Call, verdict call.Verdict, rule, reason string, oob bool) {
		t.Helper()
		got := d.Decide(c)
		if got.Verdict != verdict || got.Rule != rule || !strings.Contains(got.Reason, reason) || got.OutOfBand != oob || got.DryRun {
			t.Errorf("%s: %+v, want %s by %q (%q)", name, got, verdict, rule, reason)
		}
	}
	check("tmp", decideCall("delete_file", destroyAnn, hints.Hints{}, `{"path":"tmp/x"}`), call.Allow, "tmp", `the deployer's rule "tmp"`, false)
	check("not tmp", decideCall("delete_file", destroyAnn, hints.Hints{}, `{"path":"src/x"}`), call.Confirm, "", "destructive", false)
	check("missing argument", decideCall("delete_file", destroyAnn, hints.Hints{}, `{}`), call.Deny, "tmp", `the decision rule "tmp" could not be evaluated`, false)
	check("effect", decideCall("write_file", writeAnn, hints.Hints{}, `{}`), call.Confirm, "writes", "", true)
	c := decideCall("read_file", readAnn, hints.Hints{}, "")
	c.Client.Principal = "bob"
	check("principal", c, call.Deny, "bob", "bob may not", false)

	other := decideCall("read_file", readAnn, hints.Hints{}, "")
	other.Tool.Upstream = "github"
	if got := d.Decide(other); got.Verdict != call.Deny || got.Rule != "other-server" || !got.DryRun {
		t.Errorf("other server: %+v", got)
	}
}

// TestNewDeciderErrors names each bad rule and what is wrong.
func TestNewDeciderErrors(t *testing.T) {
	_, err := stage.NewDecider(&stage.DecideOptions{
		Mode: "sometimes",
		Rules: []stage.DecisionRule{
			{Verdict: call.Allow},
			{Name: "a", Verdict: "maybe"},
			{Name: "a", Verdict: call.Deny, OutOfBand: true},
			{Name: "b", Verdict: call.Allow, Tools: []string{"[x"}},
			{Name: "c", Verdict: call.Allow, When: "args.x +"},
			{Name: "d", Verdict: call.Allow, When: "effect"},
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
	h := chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) {
		forwarded++
		return json.RawMessage(`{"content":[]}`), nil
	}), &stage.Confirmed{})
	for _, tc := range []struct {
		name    string
		d       *call.Decision
		conf    *call.Confirmation
		forward bool
		text    string
	}{
		{"no decision", nil, nil, true, ""},
		{"allow", &call.Decision{Verdict: call.Allow}, nil, true, ""},
		{"dry-run deny", &call.Decision{Verdict: call.Deny, DryRun: true}, nil, true, ""},
		{"deny", &call.Decision{Verdict: call.Deny, Reason: "no"}, nil, false, "The gateway refused the call of t on server files: no."},
		{"unconfirmed", &call.Decision{Verdict: call.Confirm, Reason: "why"}, nil, false, "needs confirmation (why), and this client cannot be asked"},
		{"confirmed", &call.Decision{Verdict: call.Confirm}, &call.Confirmation{By: "client"}, true, ""},
		{"in band for out of band", &call.Decision{Verdict: call.Confirm, OutOfBand: true, Reason: "merges"}, &call.Confirmation{By: "client"}, false, "needs a person's approval out of band (merges)"},
		{"approved on the page", &call.Decision{Verdict: call.Confirm, OutOfBand: true}, &call.Confirmation{By: "page"}, true, ""},
		{"dry-run confirm", &call.Decision{Verdict: call.Confirm, DryRun: true}, nil, true, ""},
		{"deny though confirmed", &call.Decision{Verdict: call.Deny, Reason: "no"}, &call.Confirmation{By: "page"}, false, "The gateway refused the call"},
		{"out of band, unconfirmed", &call.Decision{Verdict: call.Confirm, OutOfBand: true, Reason: "merges"}, nil, false, "no out-of-band approval configured"},
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
			r := decodeResult(t, res)
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
		action, err := stage.ConfirmAnswer(m[stage.ConfirmKey])
		if err != nil {
			if action != "" {
				t.Fatalf("error %v with action %q", err, action)
			}
			return
		}
		e, _ := m[stage.ConfirmKey].(*mcp.ElicitResult)
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
	var rules []stage.DecisionRule
	for i := range 18 {
		rules = append(rules, stage.DecisionRule{Name: fmt.Sprintf("github-%d", i), Servers: []string{"github"},
			Tools: []string{fmt.Sprintf("tool_%d*", i)}, When: `args.force == true`, Verdict: call.Deny})
	}
	rules = append(rules,
		stage.DecisionRule{Name: "blocked", When: `principal == "blocked"`, Verdict: call.Deny},
		stage.DecisionRule{Name: "deletes", When: `effect == "delete" && server != "scratch"`, Verdict: call.Confirm, OutOfBand: true})
	for _, tc := range []struct {
		name  string
		rules []stage.DecisionRule
	}{{"rules=0", nil}, {"rules=20", rules}} {
		b.Run(tc.name, func(b *testing.B) {
			d, err := stage.NewDecider(&stage.DecideOptions{Rules: tc.rules})
			if err != nil {
				b.Fatal(err)
			}
			c := decideCall("read_file", readAnn, hints.Hints{}, `{"path":"a"}`)
			b.ReportAllocs()
			for b.Loop() {
				if d.Decide(c).Verdict != call.Allow {
					b.Fatal("not allowed")
				}
			}
		})
	}
}

// TestStaticConfirms: the listing says a tool asks first only when every
// call of it is confirmed: by the defaults, or by the first rule for it
// without a condition; a rule with a condition, or one that allows,
// leaves the listing claiming nothing.
func TestStaticConfirms(t *testing.T) {
	tool := func(server, name string, ann *mcp.ToolAnnotations) *catalog.Tool {
		return &catalog.Tool{Name: name, Upstream: server, Tool: &mcp.Tool{Name: name, Annotations: ann}}
	}
	destructive := &mcp.ToolAnnotations{DestructiveHint: new(true)}
	d, err := stage.NewDecider(&stage.DecideOptions{
		Servers: map[string]stage.Mode{"trial": stage.DryRun},
		Rules: []stage.DecisionRule{
			{Name: "scratch", Servers: []string{"files"}, Tools: []string{"delete_scratch"}, Verdict: call.Allow},
			{Name: "tmp", Tools: []string{"delete_tmp"}, When: `args.path.startsWith("tmp/")`, Verdict: call.Allow},
			{Name: "send", Tools: []string{"send_*"}, Verdict: call.Confirm},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    *catalog.Tool
		want bool
	}{
		{tool("files", "delete_file", destructive), true},
		{tool("files", "read_file", &mcp.ToolAnnotations{ReadOnlyHint: true}), false},
		{tool("files", "delete_scratch", destructive), false},
		{tool("other", "delete_scratch", destructive), true},
		{tool("files", "delete_tmp", destructive), false},
		{tool("files", "send_mail", &mcp.ToolAnnotations{DestructiveHint: new(false)}), true},
		{tool("trial", "delete_file", destructive), false},
	} {
		if got := d.StaticConfirms(tc.t); got != tc.want {
			t.Errorf("%s on %s: %v, want %v", tc.t.Name, tc.t.Upstream, got, tc.want)
		}
	}
}

// TestDecideFlow: a call that carries a value read elsewhere is confirmed
// (or denied, with Flow deny) with the flow's reason, even when the
// defaults or a rule would allow it; a rule that reads flow decides it
// itself; dry-run records it.
func TestDecideFlow(t *testing.T) {
	f := &call.Flow{From: "fs__read_text_file", Upstream: "fs", CallsAgo: 2, Reason: "the call sends a value read from fs__read_text_file 2 calls ago to t"}
	flowing := func(ann preflight.Annotations) *call.Call {
		c := decideCall("t", ann, hints.Hints{}, "")
		c.Flow = f
		return c
	}
	mk := func(o *stage.DecideOptions) *stage.Decider {
		d, err := stage.NewDecider(o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	allowAll := stage.DecisionRule{Name: "allow-all", Verdict: call.Allow}
	readsFlow := stage.DecisionRule{Name: "recent-flows", When: `flow.carries && flow.callsAgo < 3 && "fs__read_text_file" in flow.from`, Verdict: call.Deny, Reason: "recent"}
	for _, tc := range []struct {
		name    string
		o       *stage.DecideOptions
		c       *call.Call
		verdict call.Verdict
		reason  string
		dryRun  bool
	}{
		{"no flow", nil, decideCall("t", writeAnn, hints.Hints{}, ""), call.Allow, "the call changes data", false},
		{"write", nil, flowing(writeAnn), call.Confirm, f.Reason, false},
		{"destructive", nil, flowing(destroyAnn), call.Confirm, f.Reason + "; and the call is destructive", false},
		{"deny", &stage.DecideOptions{Flow: call.Deny}, flowing(writeAnn), call.Deny, f.Reason, false},
		{"a rule allows", &stage.DecideOptions{Rules: []stage.DecisionRule{allowAll}}, flowing(writeAnn), call.Confirm, f.Reason, false},
		{"a rule reads flow", &stage.DecideOptions{Rules: []stage.DecisionRule{readsFlow}}, flowing(writeAnn), call.Deny, "recent", false},
		{"a rule reads flow, none", &stage.DecideOptions{Rules: []stage.DecisionRule{readsFlow}}, decideCall("t", writeAnn, hints.Hints{}, ""), call.Allow, "the call changes data", false},
		{"dry-run", &stage.DecideOptions{Mode: stage.DryRun}, flowing(writeAnn), call.Confirm, f.Reason, true},
	} {
		got := mk(tc.o).Decide(tc.c)
		if got.Verdict != tc.verdict || !strings.HasPrefix(got.Reason, tc.reason) || got.DryRun != tc.dryRun {
			t.Errorf("%s: %+v, want %s %q", tc.name, got, tc.verdict, tc.reason)
		}
	}
	if _, err := stage.NewDecider(&stage.DecideOptions{Flow: call.Allow}); err == nil {
		t.Error("Flow allow was accepted")
	}
}
