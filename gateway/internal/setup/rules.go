package setup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/gateway/internal/rules/pack"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// RulesOptions configure a [RulesResolver]. Nil means defaults.
type RulesOptions struct {
	// Packs names the rules packs of upstreams by the gateway's name for
	// them; an upstream not named gets the pack its serverInfo name
	// selects ([pack.Detect]) when it is trusted, none when it is not.
	Packs map[string][]string
	// Logger receives rules that do not fit an upstream's tools and
	// resolutions with problems. Nil discards them.
	Logger *slog.Logger
}

// RulesResolver is a [stage.Resolver] backed by package rules: the
// deployer's rules and overrides, the upstream's own tools/resolve within
// its trust and static bounds, and the shipped rules pack. It keeps the
// rules checked against each upstream's current tools.
type RulesResolver struct {
	cfg    rules.Config
	packs  map[string][]string // explicit
	logger *slog.Logger

	mu       sync.Mutex
	rules    *rules.Rules
	detected map[string]string           // upstream -> auto-detected pack ("" none)
	listings map[string]*catalog.Listing // upstream -> listing the rules were given
	expanded map[string]map[int][]string // upstream -> rule index -> tools its globs match
}

// isGlob reports whether a rule's tool entry is a path.Match pattern
// rather than a name (a tool name cannot hold these characters).
func isGlob(tool string) bool { return strings.ContainsAny(tool, `*?[\`) }

// hasGlobs reports whether a rule of s names its tools by a pattern.
func hasGlobs(s rules.Server) bool {
	return slices.ContainsFunc(s.Rules, func(r rules.Rule) bool { return slices.ContainsFunc(r.Tools, isGlob) })
}

// expand returns, for each rule of s with a pattern, the tools of l its
// entries name or match, in l's order; a rule that matches none keeps
// its patterns (which name no tool).
func expand(s rules.Server, l *catalog.Listing) map[int][]string {
	out := map[int][]string{}
	for i, r := range s.Rules {
		if !slices.ContainsFunc(r.Tools, isGlob) {
			continue
		}
		var tools []string
		for _, t := range l.Tools {
			if slices.ContainsFunc(r.Tools, func(p string) bool {
				ok, _ := path.Match(p, t.Name)
				return p == t.Name || ok
			}) && !slices.Contains(tools, t.Name) {
				tools = append(tools, t.Name)
			}
		}
		if len(tools) > 0 {
			out[i] = tools
		}
	}
	return out
}

// NewRulesResolver compiles cfg (without packs: they are added per
// upstream as [RulesOptions.Packs] say or as detected).
func NewRulesResolver(cfg rules.Config, opts *RulesOptions) (*RulesResolver, error) {
	var o RulesOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &RulesResolver{cfg: cfg, packs: o.Packs, logger: o.Logger,
		detected: map[string]string{}, listings: map[string]*catalog.Listing{}, expanded: map[string]map[int][]string{}}
	if r.cfg.Servers == nil {
		r.cfg.Servers = map[string]rules.Server{}
	}
	for name := range r.packs {
		if _, ok := r.cfg.Servers[name]; !ok {
			r.cfg.Servers[name] = rules.Server{}
		}
	}
	var err error
	if r.rules, err = r.compile(); err != nil {
		return nil, err
	}
	return r, nil
}

// RulesResolverFromConfig maps the servers' trust, overrides and rules of a
// configuration onto a [RulesResolver].
//
// A server's pack is the shipped rules pack its serverInfo name selects
// (pack: true, the default), none (pack: false), or the pack named; a rule's
// tool is one tool, every tool ("*"), or a glob (path.Match) matched
// against the upstream's tools when it lists them.
func RulesResolverFromConfig(cfg *config.Config, opts *RulesOptions) (*RulesResolver, error) {
	rc := rules.Config{Servers: map[string]rules.Server{}}
	var o RulesOptions
	if opts != nil {
		o = *opts
	}
	o.Packs = maps.Clone(o.Packs)
	if o.Packs == nil {
		o.Packs = map[string][]string{}
	}
	var errs []error
	for _, name := range cfg.Names() {
		s := cfg.Servers[name]
		switch s.Pack {
		case config.PackAuto, "":
		case config.PackOff:
			o.Packs[name] = []string{}
		default:
			if _, err := pack.Get(string(s.Pack)); err != nil {
				errs = append(errs, fmt.Errorf("configuration: servers.%s.pack: %q is not a rules pack shipped with the gateway (allowed: true, false, %s)", name, s.Pack, strings.Join(pack.Names(), ", ")))
				continue
			}
			o.Packs[name] = []string{string(s.Pack)}
		}
		rs := rules.Server{Trust: rules.Trust(s.Trust)}
		if len(s.Overrides) > 0 {
			rs.Overrides = make(map[string]rules.Override, len(s.Overrides))
			for tool, o := range s.Overrides {
				rs.Overrides[tool] = rules.Override{Annotations: patchOf(o.Annotations), Hints: hintPatchOf(o.Hints)}
			}
		}
		for i, rule := range s.Rules {
			var tools []string
			if rule.Tool != "" && rule.Tool != "*" {
				if _, err := path.Match(rule.Tool, ""); err != nil {
					errs = append(errs, fmt.Errorf("configuration: servers.%s.rules[%d].tool: %q is not a glob pattern (* any characters, ? one, [a-z] one of a class)", name, i, rule.Tool))
					continue
				}
				tools = []string{rule.Tool}
			}
			rs.Rules = append(rs.Rules, rules.Rule{Name: rule.Name, Tools: tools, When: rule.When,
				Annotations: patchOf(rule.Annotations), Hints: hintPatchOf(rule.Hints)})
		}
		rc.Servers[name] = rs
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	r, err := NewRulesResolver(rc, &o)
	if err != nil {
		return nil, fmt.Errorf("configuration: rules: %w", err)
	}
	return r, nil
}

func patchOf(a config.Annotations) rules.AnnotationPatch {
	return rules.AnnotationPatch{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

func hintPatchOf(h config.Hints) rules.HintPatch {
	return rules.HintPatch{Effect: string(h.Effect), Idempotent: h.Idempotent,
		RequiresConfirmation: h.RequiresConfirmation, ResultSensitivity: string(h.ResultSensitivity)}
}

// compile compiles the configuration with the packs known now; r.mu held
// or r not yet shared.
func (r *RulesResolver) compile() (*rules.Rules, error) {
	cfg := r.cfg
	cfg.Servers = maps.Clone(r.cfg.Servers)
	for name, s := range cfg.Servers {
		if ex := r.expanded[name]; len(ex) > 0 {
			s.Rules = slices.Clone(s.Rules)
			for i, tools := range ex {
				s.Rules[i].Tools = tools
			}
			cfg.Servers[name] = s
		}
		names := r.packs[name]
		if _, explicit := r.packs[name]; !explicit && r.detected[name] != "" {
			names = []string{r.detected[name]}
		}
		if len(names) == 0 {
			continue
		}
		p, err := pack.Rules(names...)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		s.Pack = p
		cfg.Servers[name] = s
	}
	for name, d := range r.detected {
		if _, ok := cfg.Servers[name]; !ok && d != "" {
			p, err := pack.Rules(d)
			if err != nil {
				return nil, err
			}
			cfg.Servers[name] = rules.Server{Pack: p}
		}
	}
	return rules.Compile(cfg)
}

// Listed implements gateway.ListingObserver: the rules are checked (and
// their tool globs expanded) against an upstream's tools as soon as it
// lists them, not at its first call.
func (r *RulesResolver) Listed(name string, l *catalog.Listing, info *mcp.Implementation) {
	r.listed(name, l, info)
}

// listed gives the rules the upstream's current tools when its listing
// changed since they were last given, detecting its pack first, and
// returns the rules in force. It is cheap when nothing changed.
func (r *RulesResolver) listed(name string, l *catalog.Listing, info *mcp.Implementation) *rules.Rules {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l == nil || r.listings[name] == l {
		return r.rules
	}
	r.listings[name] = l
	recompile := false
	if s, ok := r.cfg.Servers[name]; ok && hasGlobs(s) {
		if ex := expand(s, l); !maps.EqualFunc(ex, r.expanded[name], slices.Equal) {
			prev := r.expanded[name]
			r.expanded[name] = ex
			if nr, err := r.compile(); err != nil {
				r.logger.Warn("rules whose tool globs match these tools do not compile; the previous match stays", "server", name, "error", err)
				r.expanded[name] = prev
			} else {
				r.rules, recompile = nr, true
			}
		}
	}
	if _, explicit := r.packs[name]; !explicit && r.cfg.Servers[name].Trust != rules.Untrusted && info != nil {
		d, _ := pack.Detect(info.Name)
		if d != r.detected[name] {
			r.detected[name] = d
			nr, err := r.compile()
			if err != nil {
				r.logger.Warn("rules pack not applied", "server", name, "pack", d, "error", err)
				r.detected[name] = ""
			} else {
				r.rules, recompile = nr, true
			}
		}
	}
	if recompile {
		for other, ol := range r.listings {
			if other != name {
				r.setTools(other, ol)
			}
		}
	}
	r.setTools(name, l)
	return r.rules
}

func (r *RulesResolver) setTools(name string, l *catalog.Listing) {
	tools := make([]*mcp.Tool, 0, len(l.Tools))
	for _, t := range l.Tools {
		if t.Tool != nil {
			tools = append(tools, t.Tool)
		}
	}
	if err := r.rules.SetTools(name, tools); err != nil {
		r.logger.Warn("rules do not fit the upstream's tools; those tools resolve to their static declaration", "server", name, "error", err)
	}
}

// Resolve implements [stage.Resolver].
func (r *RulesResolver) Resolve(ctx context.Context, q *stage.ResolveQuery) (*call.Resolution, error) {
	if q.Tool == nil || q.Tool.Tool == nil {
		return stage.Static(q.Tool), nil
	}
	rs := r.current()
	var up rules.UpstreamResolver
	if q.Upstream != nil {
		rs = r.listed(q.Tool.Upstream, q.Upstream.Listing(), q.Upstream.ServerInfo())
		if q.Tool.Resolvable {
			conn, raw := q.Upstream, q.RawArguments
			up = rules.UpstreamFunc(func(ctx context.Context, name string, _ map[string]any) (*preflight.ResolveResult, error) {
				res, _, err := conn.Resolve(ctx, name, raw)
				return res, err
			})
		}
	}
	res, err := rs.Resolve(ctx, rules.Call{Server: q.Tool.Upstream, Tool: q.Tool.Tool, Arguments: q.RawArguments,
		Args: q.Arguments, Principal: q.Principal}, up)
	if err != nil {
		return nil, err
	}
	if res.Problem != nil {
		r.logger.WarnContext(ctx, "resolution problem", "server", q.Tool.Upstream, "tool", q.Tool.Name, "layer", string(res.Layer), "problem", res.Problem)
	}
	source := string(res.Layer)
	if res.Layer == rules.LayerRule {
		source = "rules"
	}
	return &call.Resolution{Resolution: res.Resolution(), Source: source, Args: res.Args}, nil
}

func (r *RulesResolver) current() *rules.Rules {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rules
}
