package config

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on the decisions section.
const (
	MaxDecisionRules   = 1000    // rules in decisions.rules
	maxDecisionReason  = 512     // a rule's reason, in characters
	maxDecisionWhen    = 8 << 10 // a rule's expression, in bytes
	maxDecisionFilters = 256     // servers or tools of one rule
)

// Decisions are the gateway's decisions on tool calls: each call is
// allowed, confirmed or denied, from its effective annotations and hints
// and from these rules.
type Decisions struct {
	// Mode is enforce (default) or dry-run: decisions are recorded and
	// logged, never enforced. A server's own decisions key overrides it.
	Mode DecisionMode `json:"mode"`
	// Rules are tried in order; the first that matches a call decides.
	// A call no rule matches gets the defaults: read and write allowed;
	// delete, destructive and requiresConfirmation confirmed.
	Rules []DecisionRule `json:"rules,omitempty"`
}

// DecisionMode says whether decisions are enforced.
type DecisionMode string

// The decision modes.
const (
	DecisionsEnforce DecisionMode = "enforce" // default
	DecisionsDryRun  DecisionMode = "dry-run" // recorded, not enforced
)

// DecisionRule decides the calls it matches.
type DecisionRule struct {
	// Name identifies the rule in decisions, logs and the audit; unique.
	Name string `json:"name"`
	// Servers are the names (in servers) of the upstreams the rule
	// applies to; empty means all.
	Servers []string `json:"servers,omitempty"`
	// Tools are path.Match globs over the upstream's tool names; empty
	// means all.
	Tools []string `json:"tools,omitempty"`
	// When is a CEL expression over server, tool, args, effect and
	// principal; empty means always. The gateway compiles it.
	When string `json:"when,omitempty"`
	// Decision is what a matching call gets.
	Decision Verdict `json:"decision"`
	// Approval, for decision confirm, is who confirms: inband (default;
	// the client asks its user) or human (a person out of band, whom the
	// agent cannot impersonate).
	Approval Approval `json:"approval,omitempty"`
	// Reason is told to the client and recorded; empty means one naming
	// the rule.
	Reason string `json:"reason,omitempty"`
}

// Verdict is a decision rule's decision.
type Verdict string

// The decisions.
const (
	VerdictAllow   Verdict = "allow"
	VerdictConfirm Verdict = "confirm"
	VerdictDeny    Verdict = "deny"
)

// Approval is who confirms a call.
type Approval string

// The approvals.
const (
	ApprovalInBand Approval = "inband" // the client, when it can be asked (default)
	ApprovalHuman  Approval = "human"  // a person, out of band
)

// decisions checks the decisions section and applies its defaults.
func (p *parser) decisions(c *Config) {
	d := &c.Decisions
	if d.Mode == "" {
		d.Mode = DecisionsEnforce
	}
	if len(d.Rules) > MaxDecisionRules {
		p.fail("decisions.rules", "%d rules: at most %d", len(d.Rules), MaxDecisionRules)
	}
	first := map[string]int{}
	for i := range d.Rules {
		r := &d.Rules[i]
		at := index("decisions.rules", i)
		switch j, dup := first[r.Name]; {
		case r.Name == "":
			p.fail(at+".name", "required: a rule's name identifies it in decisions, logs and the audit")
		case utf8.RuneCountInString(r.Name) > maxName || hasControl(r.Name):
			p.fail(at+".name", "a rule's name has 1 to %d characters, none of them control characters", maxName)
		case dup:
			p.fail(at+".name", "%s is also the name of decisions.rules[%d]", quote(r.Name), j)
		default:
			first[r.Name] = i
		}
		if r.Decision == "" {
			p.fail(at+".decision", "required: allow, confirm or deny")
		}
		switch {
		case r.Approval == "":
			if r.Decision == VerdictConfirm {
				r.Approval = ApprovalInBand
			}
		case r.Decision != VerdictConfirm && r.Decision != "":
			p.fail(at+".approval", "only a rule whose decision is confirm says who approves; this one's is %s", r.Decision)
		}
		if len(r.Servers) > maxDecisionFilters {
			p.fail(at+".servers", "%d servers: at most %d", len(r.Servers), maxDecisionFilters)
		}
		names := c.Names()
		for k, s := range r.Servers {
			if _, ok := c.Servers[s]; !ok {
				p.fail(index(at+".servers", k), "%s is not a server of this configuration (servers: %s)", quote(s), strings.Join(names, ", "))
			} else if j := slices.Index(r.Servers, s); j < k {
				p.fail(index(at+".servers", k), "%s is also servers[%d]", quote(s), j)
			}
		}
		if len(r.Tools) > maxDecisionFilters {
			p.fail(at+".tools", "%d tools: at most %d", len(r.Tools), maxDecisionFilters)
		}
		for k, t := range r.Tools {
			if _, err := path.Match(t, ""); err != nil || t == "" {
				p.fail(index(at+".tools", k), "%s is not a glob pattern (* any characters, ? one, [a-z] one of a class)", quote(t))
			}
		}
		if len(r.When) > maxDecisionWhen {
			p.fail(at+".when", "the expression is %d bytes: at most %d", len(r.When), maxDecisionWhen)
		}
		if utf8.RuneCountInString(r.Reason) > maxDecisionReason || hasControl(r.Reason) {
			p.fail(at+".reason", "a reason has up to %d characters, none of them control characters", maxDecisionReason)
		}
	}
	if len(d.Rules) == 0 {
		d.Rules = nil
	}
}
