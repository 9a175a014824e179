package rules

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// Defaults of [Config]'s limits.
const (
	DefaultUpstreamTimeout  = 2 * time.Second
	DefaultMaxArgumentBytes = 1 << 20
	DefaultCostLimit        = 100_000
	// MaxExpressionBytes is the longest rule expression accepted.
	MaxExpressionBytes = 8 << 10
)

// Config is everything [Compile] needs. Its zero value is valid: no
// rules, every upstream trusted, default limits.
type Config struct {
	// Servers holds the rules of each upstream, by the gateway's name for
	// it. An upstream not listed has no rules and is trusted.
	Servers map[string]Server
	// UpstreamTimeout bounds an upstream's tools/resolve answer; after it
	// the call resolves without the upstream. Zero means
	// [DefaultUpstreamTimeout].
	UpstreamTimeout time.Duration
	// MaxArgumentBytes bounds the arguments the rules decode; larger
	// arguments resolve to the static declaration. Zero means
	// [DefaultMaxArgumentBytes].
	MaxArgumentBytes int
	// CostLimit bounds the work of one rule evaluation, in CEL cost units;
	// a rule that exceeds it is an evaluation error. Zero means
	// [DefaultCostLimit].
	CostLimit uint64
}

// Trust says how far an upstream's own annotations and hints are believed.
type Trust string

const (
	// Trusted (the default): the upstream's static declaration and its
	// tools/resolve answers are used, within the static bounds.
	Trusted Trust = "trusted"
	// Untrusted: the upstream's annotations and hints, static and
	// resolved, can only add caution to the protocol's conservative
	// defaults, never remove it. Deployer rules and overrides still apply.
	Untrusted Trust = "untrusted"
)

// Server is the configuration of one upstream.
type Server struct {
	// Trust is "trusted" (also when empty) or "untrusted".
	Trust Trust `json:"trust,omitempty"`
	// Rules are the deployer's rules, tried in order before the upstream is
	// asked; the first that matches decides.
	Rules []Rule `json:"rules,omitempty"`
	// Pack are rules shipped with the project for this upstream's server
	// (package pack), tried in order after the upstream was asked and did
	// not answer.
	Pack []Rule `json:"-"`
	// Overrides fix annotations and hints of a tool, by the upstream's
	// tool name. They win over every other source.
	Overrides map[string]Override `json:"overrides,omitempty"`
}

// Rule maps the calls its expression matches to annotations and hints.
type Rule struct {
	// Name identifies the rule in errors and results; unique per server.
	Name string `json:"name"`
	// Tools are the upstream tool names the rule applies to; empty means
	// every tool of the server, in which case the expression may not read
	// args.
	Tools []string `json:"tools,omitempty"`
	// When is a CEL expression of type bool over args (the call's
	// arguments, a map), tool (the tool's name), server (the gateway's
	// name for the upstream) and principal (the caller's identity, "" when
	// unauthenticated). Empty means true. An argument the client may leave
	// out is read with has(args.x) or args.?x.orValue(default): reading a
	// missing one is an evaluation error.
	When string `json:"when,omitempty"`
	// Annotations and Hints are what a matching call is; fields left unset
	// keep the tool's static values.
	Annotations AnnotationPatch `json:"annotations,omitzero"`
	Hints       HintPatch       `json:"hints,omitzero"`
	// Why says why the rule is right, for readers; it has no effect.
	Why string `json:"why,omitempty"`
}

// Override fixes some of a tool's annotations and hints; unset fields are
// left to the other sources. An override that describes a mutating tool
// (readOnlyHint false, destructiveHint true, idempotentHint false, or an
// effect other than read) also keeps every resolution from calling the
// tool read-only.
type Override struct {
	Annotations AnnotationPatch `json:"annotations,omitzero"`
	Hints       HintPatch       `json:"hints,omitzero"`
}

// AnnotationPatch sets some of the four behaviour annotations; nil leaves a
// value as it was.
type AnnotationPatch struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// HintPatch sets some of the mcp.dev/ policy hints; empty or nil leaves a
// hint as it was.
type HintPatch struct {
	Effect               string `json:"effect,omitempty"`
	Idempotent           *bool  `json:"idempotent,omitempty"`
	RequiresConfirmation *bool  `json:"requiresConfirmation,omitempty"`
	ResultSensitivity    string `json:"resultSensitivity,omitempty"`
}

// IsZero reports whether p sets nothing.
func (p AnnotationPatch) IsZero() bool {
	return p.ReadOnlyHint == nil && p.DestructiveHint == nil && p.IdempotentHint == nil && p.OpenWorldHint == nil
}

// IsZero reports whether p sets nothing.
func (p HintPatch) IsZero() bool {
	return p.Effect == "" && p.Idempotent == nil && p.RequiresConfirmation == nil && p.ResultSensitivity == ""
}

// apply returns a with the values p sets.
func (p AnnotationPatch) apply(a preflight.Annotations) preflight.Annotations {
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&a.ReadOnlyHint, p.ReadOnlyHint)
	set(&a.DestructiveHint, p.DestructiveHint)
	set(&a.IdempotentHint, p.IdempotentHint)
	set(&a.OpenWorldHint, p.OpenWorldHint)
	return a
}

// hints converts p, checking its values against the vocabulary.
func (p HintPatch) hints() (hints.Hints, error) {
	h := hints.Hints{
		Effect:               hints.Effect(p.Effect),
		Idempotent:           p.Idempotent,
		RequiresConfirmation: p.RequiresConfirmation,
		ResultSensitivity:    hints.Sensitivity(p.ResultSensitivity),
	}
	return h, h.Validate()
}

// Error is a problem with one rule or override, found when the
// configuration is compiled or checked against a tool.
type Error struct {
	Server   string // the gateway's name for the upstream
	Rule     string // the rule's name; "" for an override
	Tool     string // the tool, when the problem is specific to one
	Argument string // the argument, when the problem is about one
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q", e.Server)
	if e.Rule != "" {
		fmt.Fprintf(&b, ": rule %q", e.Rule)
	} else if e.Tool != "" {
		b.WriteString(": override")
	}
	if e.Tool != "" {
		fmt.Fprintf(&b, ": tool %q", e.Tool)
	}
	if e.Argument != "" {
		fmt.Fprintf(&b, ": argument %q", e.Argument)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// validate checks what can be checked without CEL or a tool.
func (s *Server) validate(name string) error {
	var errs []error
	switch s.Trust {
	case "", Trusted, Untrusted:
	default:
		errs = append(errs, &Error{Server: name, Err: fmt.Errorf("trust: invalid value %q (allowed: %s, %s)", s.Trust, Trusted, Untrusted)})
	}
	seen := make(map[string]bool)
	for i := range s.Rules {
		errs = append(errs, s.Rules[i].validate(name, i, seen))
	}
	for i := range s.Pack {
		errs = append(errs, s.Pack[i].validate(name, i, seen))
	}
	tools := make([]string, 0, len(s.Overrides))
	for t := range s.Overrides {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		o := s.Overrides[t]
		if o.Annotations.IsZero() && o.Hints.IsZero() {
			errs = append(errs, &Error{Server: name, Tool: t, Err: errors.New("sets no annotation and no hint")})
		}
		if _, err := o.Hints.hints(); err != nil {
			errs = append(errs, &Error{Server: name, Tool: t, Err: err})
		}
	}
	return errors.Join(errs...)
}

func (r *Rule) validate(server string, i int, seen map[string]bool) error {
	var errs []error
	if r.Name == "" {
		return &Error{Server: server, Rule: fmt.Sprintf("#%d", i+1), Err: errors.New("has no name")}
	}
	if seen[r.Name] {
		errs = append(errs, &Error{Server: server, Rule: r.Name, Err: errors.New("another rule of this server has the same name")})
	}
	seen[r.Name] = true
	if r.Annotations.IsZero() && r.Hints.IsZero() {
		errs = append(errs, &Error{Server: server, Rule: r.Name, Err: errors.New("sets no annotation and no hint")})
	}
	if _, err := r.Hints.hints(); err != nil {
		errs = append(errs, &Error{Server: server, Rule: r.Name, Err: err})
	}
	if len(r.When) > MaxExpressionBytes {
		errs = append(errs, &Error{Server: server, Rule: r.Name, Err: fmt.Errorf("expression is %d bytes long (at most %d)", len(r.When), MaxExpressionBytes)})
	}
	for _, t := range r.Tools {
		if t == "" {
			errs = append(errs, &Error{Server: server, Rule: r.Name, Err: errors.New("tools: empty tool name")})
		}
	}
	return errors.Join(errs...)
}
