package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// ErrInvalidArguments: the call's arguments are not a JSON object, or the
// upstream answered tools/resolve with -32602. The gateway answers its
// client -32602 and does not make the call.
var ErrInvalidArguments = errors.New("rules: invalid arguments")

// maxBoundTools bounds the tools remembered per server.
const maxBoundTools = 4096

// Rules resolves calls. Make one with [Compile]; it is safe for
// concurrent use.
type Rules struct {
	servers  map[string]*server
	unknown  *server // upstreams without configuration: trusted, no rules
	timeout  time.Duration
	maxArgs  int
	emptyMap ref.Val
}

type server struct {
	name      string
	untrusted bool
	deployer  []*compiled
	pack      []*compiled
	overrides map[string]*override
	boxed     any // name as a CEL value

	mu    sync.RWMutex
	tools map[string]*bound
}

// bound are the rules of one tool, checked against its definition.
type bound struct {
	tool      *mcp.Tool
	base      base
	deployer  []boundRule
	pack      []boundRule
	readsArgs bool
	static    Result
	listedAnn preflight.Annotations
	listedH   hints.Hints
	err       error // the tool's rules do not fit it: it resolves to static
	boxed     any   // the tool's name as a CEL value
}

type boundRule struct {
	c      *compiled
	result Result
}

// Compile checks and compiles cfg: rule names, hint values, overrides, and
// every expression (a compile error names the rule and shows CEL's
// message). Checks against a tool's input schema happen when the tool is
// known: [Rules.SetTools], or the first [Rules.Resolve] of the tool.
func Compile(cfg Config) (*Rules, error) {
	r := &Rules{
		servers:  make(map[string]*server, len(cfg.Servers)),
		timeout:  cfg.UpstreamTimeout,
		maxArgs:  cfg.MaxArgumentBytes,
		emptyMap: types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}),
	}
	if r.timeout <= 0 {
		r.timeout = DefaultUpstreamTimeout
	}
	if r.maxArgs <= 0 {
		r.maxArgs = DefaultMaxArgumentBytes
	}
	cost := cfg.CostLimit
	if cost == 0 {
		cost = DefaultCostLimit
	}
	r.unknown = newServer("", false)
	names := make([]string, 0, len(cfg.Servers))
	for name := range cfg.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var env *cel.Env
	var errs []error
	for _, name := range names {
		sc := cfg.Servers[name]
		if err := sc.validate(name); err != nil {
			errs = append(errs, err)
			continue
		}
		if env == nil && (len(sc.Rules) > 0 || len(sc.Pack) > 0) {
			var err error
			if env, err = celEnv(); err != nil {
				return nil, fmt.Errorf("rules: CEL environment: %w", err)
			}
		}
		s := newServer(name, sc.Trust == Untrusted)
		for _, list := range []struct {
			in  []Rule
			out *[]*compiled
		}{{sc.Rules, &s.deployer}, {sc.Pack, &s.pack}} {
			for _, rule := range list.in {
				c, err := compileRule(env, name, rule, cost)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				*list.out = append(*list.out, c)
			}
		}
		for tool, o := range sc.Overrides {
			ov, err := compileOverride(name, tool, o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.overrides[tool] = ov
		}
		r.servers[name] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

func newServer(name string, untrusted bool) *server {
	return &server{
		name:      name,
		untrusted: untrusted,
		overrides: make(map[string]*override),
		boxed:     types.String(name),
		tools:     make(map[string]*bound),
	}
}

func (r *Rules) server(name string) *server {
	if s, ok := r.servers[name]; ok {
		return s
	}
	return r.unknown
}

// SetTools checks the rules of server against the tools its upstream
// lists now and makes the result what [Rules.Resolve] uses, forgetting
// tools no longer listed. Call it whenever the upstream's tools/list
// changes. It returns every problem found, joined, each an [*Error]
// naming the rule, the tool and the argument; a tool with problems
// resolves to its static declaration (no rule, no upstream answer) until
// its rules fit it. A deployer's rule or override naming a tool the
// upstream does not list is reported too, and changes nothing else (the
// shipped pack's rules may name tools an upstream does not enable).
func (r *Rules) SetTools(server string, tools []*mcp.Tool) error {
	s := r.server(server)
	if s == r.unknown {
		return nil
	}
	table := make(map[string]*bound, len(tools))
	var errs []error
	for _, t := range tools {
		if t == nil || len(table) >= maxBoundTools {
			continue
		}
		b := s.bind(t)
		if b.err != nil {
			errs = append(errs, b.err)
		}
		table[t.Name] = b
	}
	errs = append(errs, s.unlisted(table)...)
	s.mu.Lock()
	s.tools = table
	s.mu.Unlock()
	return errors.Join(errs...)
}

// unlisted reports the deployer's rules and overrides that name tools the
// upstream does not list.
func (s *server) unlisted(table map[string]*bound) []error {
	var errs []error
	for _, c := range s.deployer {
		for _, name := range c.Tools {
			if _, ok := table[name]; !ok {
				errs = append(errs, &Error{Server: s.name, Rule: c.Name, Tool: name, Err: fmt.Errorf("the upstream lists no such tool (tools: %s)", toolList(table))})
			}
		}
	}
	names := make([]string, 0, len(s.overrides))
	for name := range s.overrides {
		if _, ok := table[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		errs = append(errs, &Error{Server: s.name, Tool: name, Err: fmt.Errorf("the upstream lists no such tool (tools: %s)", toolList(table))})
	}
	return errs
}

// toolList names the tools of table, sorted, at most 20.
func toolList(table map[string]*bound) string {
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// bound returns the rules of t, binding them when t is new or changed.
func (s *server) bound(t *mcp.Tool) *bound {
	s.mu.RLock()
	b, ok := s.tools[t.Name]
	s.mu.RUnlock()
	if ok && b.tool == t {
		return b
	}
	if ok && sameDefinition(b.tool, t) {
		return b
	}
	b = s.bind(t)
	s.mu.Lock()
	if _, present := s.tools[t.Name]; present || len(s.tools) < maxBoundTools {
		s.tools[t.Name] = b
	}
	s.mu.Unlock()
	return b
}

func sameDefinition(a, b *mcp.Tool) bool {
	return reflect.DeepEqual(a.InputSchema, b.InputSchema) && reflect.DeepEqual(a.Annotations, b.Annotations) && reflect.DeepEqual(a.Meta, b.Meta)
}

// bind checks the server's rules against t and precomputes the result of
// each.
func (s *server) bind(t *mcp.Tool) *bound {
	b := &bound{tool: t, boxed: types.String(t.Name)}
	b.base = newBase(t, s.untrusted, s.overrides[t.Name])
	b.static = Result{Effective: b.base.effective(nil, hints.Hints{}), Layer: LayerStatic}
	schema, err := schemaOf(t)
	if err != nil {
		b.err = &Error{Server: s.name, Tool: t.Name, Err: err}
		b.static.Problem = b.err
		return b
	}
	var errs []error
	for _, list := range []struct {
		in    []*compiled
		out   *[]boundRule
		layer Layer
	}{{s.deployer, &b.deployer, LayerRule}, {s.pack, &b.pack, LayerPack}} {
		for _, c := range list.in {
			if c.tools != nil && !c.tools[t.Name] {
				continue
			}
			if err := c.check(s.name, t.Name, schema); err != nil {
				errs = append(errs, err)
				continue
			}
			ann := c.Annotations.apply(b.base.staticAnn)
			if cs := hints.Contradictions(ann, c.hints); len(cs) > 0 {
				errs = append(errs, &Error{Server: s.name, Rule: c.Name, Tool: t.Name, Err: fmt.Errorf("its hints contradict the annotations it gives the tool: %s", cs[0])})
				continue
			}
			res := Result{Effective: b.base.effective(&ann, c.hints), Layer: list.layer, Rule: c.Name, Args: c.refs}
			*list.out = append(*list.out, boundRule{c: c, result: res})
			b.readsArgs = b.readsArgs || c.readsArgs
		}
	}
	if len(errs) > 0 {
		b.err = errors.Join(errs...)
		b.deployer, b.pack, b.readsArgs = nil, nil, false
		b.static.Problem = b.err
	}
	b.listing()
	return b
}

// listing computes what the gateway lists for the tool: the static
// result raised to bound every rule's result.
func (b *bound) listing() {
	e := b.static.Effective
	ann, h := e.Annotations(), e.GivenHints()
	for _, list := range [][]boundRule{b.deployer, b.pack} {
		for _, br := range list {
			out := br.result.Effective
			ann = preflight.WorstCase(ann, out.Annotations())
			if h.Effect != "" && out.Effect.Value.Rank() > h.Effect.Rank() {
				h.Effect = out.Effect.Value
			}
			if h.ResultSensitivity != "" && out.ResultSensitivity.Value.Rank() > h.ResultSensitivity.Rank() {
				h.ResultSensitivity = out.ResultSensitivity.Value
			}
		}
	}
	b.listedAnn, b.listedH = ann, h
}

// Listing returns what the gateway lists for tool in its own tools/list:
// the upstream's annotations and policy hints (the protocol's defaults
// for an untrusted upstream) with the deployer's override, raised
// wherever a rule resolves some call of the tool to something riskier, so
// that every answer the gateway gives to tools/resolve stays within the
// static bounds its clients check ([preflight.Annotations.Exceeds]).
func (r *Rules) Listing(server string, tool *mcp.Tool) (preflight.Annotations, hints.Hints) {
	b := r.server(server).bound(tool)
	return b.listedAnn, b.listedH
}

// Call is one tool call to resolve.
type Call struct {
	// Server is the gateway's name for the upstream.
	Server string
	// Tool is the upstream's static definition of the tool, under the
	// upstream's own name. Pass the same pointer for every call of an
	// unchanged tool: a different one is compared with the one the rules
	// were checked against.
	Tool *mcp.Tool
	// Arguments are the call's arguments as received (a JSON object;
	// empty or null means none). They are decoded only when a rule reads
	// them or the upstream is asked.
	Arguments json.RawMessage
	// Args are the arguments already decoded, by a reader that refuses
	// repeated keys (the gateway's entry); when non-nil they are used
	// instead of decoding Arguments, which are still held to the size and
	// nesting limits. They are not modified.
	Args map[string]any
	// Principal identifies the caller ("" when unauthenticated).
	Principal string
}

// Layer says which source decided a call's resolution.
type Layer string

const (
	LayerRule     Layer = "rule"     // a deployer rule matched
	LayerUpstream Layer = "upstream" // the upstream's tools/resolve answered
	LayerPack     Layer = "pack"     // a rule of the shipped pack matched
	LayerStatic   Layer = "static"   // nothing did: the static declaration
)

// Result is the resolution of one call. Deployer overrides are already
// applied: the effective values say where each came from.
type Result struct {
	// Effective are the call's effective annotations and hints, each with
	// its source (override, resolved, static, derived, default).
	Effective policy.Effective
	// Layer is the source that decided; Rule names the rule when a rule
	// did, and Args the arguments it reads by name.
	Layer Layer
	Rule  string
	Args  []string
	// Upstream is the upstream's tools/resolve answer as received, nil
	// when it was not asked or did not answer; Shape is "seed" or
	// "extension" when it answered.
	Upstream *preflight.ResolveResult
	Shape    string
	// Problem says why a source that would have decided did not, or not
	// as it said: the upstream's error or unusable answer, an answer
	// beyond the static bounds (the more cautious of both is used), a
	// rule's evaluation error (the call then resolves to static), rules
	// that do not fit the tool. Nil when none.
	Problem error
	// SecuritySchemes and Meta come from a trusted upstream's answer.
	SecuritySchemes []preflight.SecurityScheme
	Meta            map[string]any
}

// NeedsConfirmation reports whether the call should be confirmed by the
// user first (see [policy.Effective.NeedsConfirmation]).
func (r *Result) NeedsConfirmation() bool { return r.Effective.NeedsConfirmation() }

// SafeToRetry reports whether the call may be repeated after a failure.
func (r *Result) SafeToRetry() bool { return r.Effective.SafeToRetry() }

// Resolution returns what the gateway answers its own client's
// tools/resolve with: the effective annotations, the effective hints
// (derived ones included, so that clients need not derive them), and a
// trusted upstream's security schemes and further _meta.
func (r *Result) Resolution() resolve.Resolution {
	h := r.Effective.Hints()
	if r.Effective.ResultSensitivity.Source == policy.SourceDefault {
		h.ResultSensitivity = ""
	}
	var meta map[string]any
	for k, v := range r.Meta {
		switch k {
		case preflight.MetaEffect, preflight.MetaIdempotent, preflight.MetaRequiresConfirmation,
			preflight.MetaResultSensitivity, preflight.MetaSecuritySchemes, preflight.MetaPolicyHints:
			continue
		}
		if meta == nil {
			meta = make(map[string]any, len(r.Meta))
		}
		meta[k] = v
	}
	return resolve.Resolution{
		Annotations:     r.Effective.Annotations(),
		Hints:           h,
		SecuritySchemes: r.SecuritySchemes,
		Meta:            meta,
	}
}

// Resolve resolves one call. Sources are tried in this order, the first
// that answers deciding:
//
//  1. the deployer's rules of the server, in order;
//  2. the upstream's tools/resolve, when upstream is non-nil (pass nil
//     for upstreams or tools that do not serve it), its answer checked
//     against the tool's static declaration and bounded by the upstream's
//     trust;
//  3. the pack's rules of the server, in order;
//  4. the static declaration (for an untrusted upstream, the protocol's
//     conservative defaults plus whatever caution its hints add).
//
// The deployer's override of the tool is then laid over the result. A
// rule whose evaluation fails stops the search: the call resolves to
// static, with the error in [Result.Problem]. The error return is
// reserved for calls that must not be made: arguments that are not a JSON
// object, or the upstream's -32602 (both wrap [ErrInvalidArguments]), and
// ctx's own cancellation.
func (r *Rules) Resolve(ctx context.Context, call Call, upstream UpstreamResolver) (Result, error) {
	if call.Tool == nil {
		return Result{}, errors.New("rules.Resolve: nil tool")
	}
	s := r.server(call.Server)
	b := s.bound(call.Tool)
	if b.err != nil {
		return b.static, nil
	}
	if !b.readsArgs && upstream == nil && len(b.deployer) == 0 && len(b.pack) == 0 {
		return b.static, nil
	}
	args := call.Args
	if b.readsArgs || upstream != nil {
		var err error
		if args == nil {
			args, err = r.decode(call.Arguments)
		} else {
			err = r.bounded(call.Arguments)
		}
		if err != nil {
			if errors.Is(err, ErrInvalidArguments) {
				return Result{}, err
			}
			res := b.static
			res.Problem = err
			return res, nil
		}
	}
	act := &activation{tool: b.boxed, server: s.boxed, principal: types.String(call.Principal), args: r.emptyMap}
	if args != nil {
		act.args = types.NewStringInterfaceMap(types.DefaultTypeAdapter, args)
	}

	if res, done := r.match(s, b, b.deployer, act); done {
		return res, nil
	}
	var problem error
	if upstream != nil {
		res, err := r.ask(ctx, s, b, call.Tool.Name, args, upstream)
		if err != nil || res.Layer == LayerUpstream {
			return res, err
		}
		problem = res.Problem
	}
	if res, done := r.match(s, b, b.pack, act); done {
		if res.Problem == nil {
			res.Problem = problem
		}
		return res, nil
	}
	res := b.static
	res.Problem = problem
	return res, nil
}

// match evaluates rules in order. done is true when one matched or one
// failed (res is then static with the error).
func (r *Rules) match(s *server, b *bound, rules []boundRule, act *activation) (res Result, done bool) {
	for i := range rules {
		br := &rules[i]
		if br.c.prg == nil {
			return br.result, true
		}
		out, _, err := br.c.prg.Eval(act)
		if err != nil {
			res = b.static
			res.Problem = &Error{Server: s.name, Rule: br.c.Name, Tool: b.tool.Name, Err: fmt.Errorf("evaluation failed, so the call resolves to its static declaration: %v", err)}
			return res, true
		}
		if out == types.True {
			return br.result, true
		}
	}
	return Result{}, false
}

// ask asks the upstream. A result of another layer than LayerUpstream
// carries, in Problem, why the upstream did not decide.
func (r *Rules) ask(ctx context.Context, s *server, b *bound, name string, args map[string]any, up UpstreamResolver) (Result, error) {
	if args == nil {
		args = map[string]any{}
	}
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := up.ResolveTool(actx, name, args)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if rejectsArguments(err) {
			return Result{}, fmt.Errorf("%w: the upstream rejected them: %w", ErrInvalidArguments, err)
		}
		return Result{Problem: fmt.Errorf("upstream tools/resolve failed: %w", err)}, nil
	}
	a, err := readAnswer(res, name)
	if err != nil {
		return Result{Upstream: res, Problem: fmt.Errorf("upstream tools/resolve answer unusable: %w", err)}, nil
	}
	ann, h := a.ann, a.hints
	var problem error
	if s.untrusted {
		ann = preflight.WorstCase(b.base.staticAnn, ann)
		h = cautious(b.base.staticHints, cautionOnly(h))
	} else if over := exceeds(ann, h, b.base.declaredAnn, b.base.declaredHints); len(over) > 0 {
		ann = preflight.WorstCase(b.base.declaredAnn, ann)
		h = cautious(b.base.declaredHints, h)
		problem = fmt.Errorf("upstream resolution is riskier than the tool's static declaration (%v); the more cautious of both is used", over)
	}
	out := Result{
		Effective: b.base.effective(&ann, h),
		Layer:     LayerUpstream,
		Upstream:  res,
		Shape:     a.shape,
		Problem:   problem,
	}
	if !s.untrusted {
		out.SecuritySchemes = a.schemes
		out.Meta = maps.Clone(a.meta)
	}
	return out, nil
}

// activation gives a rule its variables without building a map per call.
type activation struct {
	args                    ref.Val
	tool, server, principal any
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varArgs:
		return a.args, true
	case varTool:
		return a.tool, true
	case varServer:
		return a.server, true
	case varPrincipal:
		return a.principal, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
