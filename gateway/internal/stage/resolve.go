package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// Resolve works out what a tool call will do before it is forwarded (and
// what a client's tools/resolve answers), with its Resolver. A resolver
// that fails leaves the static annotations in place (logged): resolution
// informs the stages after it and never blocks a call by itself. Arguments
// that are not a JSON object are refused here.
type Resolve struct {
	Resolver Resolver
	Logger   *slog.Logger
}

// Name implements call.Stage.
func (*Resolve) Name() string { return "resolve" }

// Methods implements call.Scoped.
func (*Resolve) Methods() []string { return []string{call.ToolsCall, call.ToolsResolve} }

// Serve implements call.Stage.
func (s *Resolve) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Tool == nil {
		return next.Serve(ctx, c)
	}
	args, err := c.Args()
	if err != nil {
		return nil, err
	}
	if c.Tool.Tool != nil {
		if k, p := caseVariant(c.Tool.Tool.InputSchema, args, ""); k != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"params.arguments.%s differs from the tool's property %q only in case: a server that reads arguments case-insensitively (Go's encoding/json does) would take it for that property; send %q", text.Clip(k, quoteLimit), p, p)}
		}
	}
	res, err := s.Resolver.Resolve(ctx, &ResolveQuery{Tool: c.Tool, Arguments: args, RawArguments: c.Arguments,
		Principal: c.Client.Principal, Upstream: c.Upstream, ForCall: c.Method == call.ToolsCall})
	if err != nil {
		s.Logger.WarnContext(ctx, "resolution failed; using the static annotations", "tool", text.Clip(c.Name, quoteLimit), "error", err)
		res = Static(c.Tool)
	}
	c.Resolution = res
	return next.Serve(ctx, c)
}

// caseVariant returns the first argument (its path) whose key differs
// from a property of schema only in case, and that property; "" when
// none does. The entry refuses two keys that fold alike in one object; a
// lone variant of a property name is refused here, where the schema is
// known.
func caseVariant(schema any, args map[string]any, prefix string) (string, string) {
	props := properties(schema)
	if len(props) == 0 {
		return "", ""
	}
	for k, v := range args {
		if _, ok := props[k]; ok {
			if sub, ok := v.(map[string]any); ok {
				if a, p := caseVariant(props[k], sub, prefix+k+"."); a != "" {
					return a, p
				}
			}
			continue
		}
		for p := range props {
			if strings.EqualFold(k, p) {
				return prefix + k, p
			}
		}
	}
	return "", ""
}

// properties returns the properties of a JSON schema, decoded.
func properties(schema any) map[string]any {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	case nil:
		return nil
	default:
		b, err := json.Marshal(s)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
	}
	props, _ := m["properties"].(map[string]any)
	return props
}

// Resolver works out what one call of an aggregated tool will do: its four
// annotations and its policy hints. The gateway asks it for every
// tools/resolve a client sends (both shapes) and before every tools/call.
// It must be cheap, free of side effects other than asking the upstream,
// and safe for concurrent use.
//
// The gateway checks every answer against the tool's static declaration
// before a client sees it (package resolve withholds a resolution riskier
// than the tools/list annotations), so a Resolver cannot make a tool look
// safer than its upstream declared it; it can only refine within the
// bounds, or return the static annotations.
type Resolver interface {
	Resolve(ctx context.Context, q *ResolveQuery) (*call.Resolution, error)
}

// ResolveQuery is the call a [Resolver] is asked about.
type ResolveQuery struct {
	// Tool is the aggregated tool: its upstream, names, raw and decoded
	// static definition, and whether the upstream resolves it itself.
	Tool *catalog.Tool
	// Arguments are the call's complete arguments, decoded once by the
	// entry; RawArguments the same as judged, byte for byte. Do not
	// modify them.
	Arguments    map[string]any
	RawArguments json.RawMessage
	// Principal is the authenticated user, "" when there is none.
	Principal string
	// Upstream is the tool's upstream connection, to ask its tools/resolve
	// when Tool.Resolvable.
	Upstream *upstream.Conn
	// ForCall reports that a tools/call follows this resolution (rather
	// than a client's tools/resolve).
	ForCall bool
}

// Static returns the static resolution of a tool: its annotations with the
// protocol's defaults applied and the policy hints of its _meta (hints
// that do not parse are left out).
func Static(t *catalog.Tool) *call.Resolution {
	r := &call.Resolution{Source: "static"}
	if t == nil || t.Tool == nil {
		r.Annotations = preflight.DefaultAnnotations
		return r
	}
	r.Annotations = preflight.AnnotationsOf(t.Tool.Annotations)
	if h, err := hints.Read(t.Tool.Meta); err == nil {
		r.Hints = h
	}
	return r
}

// UpstreamOrStatic is the gateway's default [Resolver]: a tool whose
// upstream resolves it is resolved there (either shape of tools/resolve),
// and the answer is used only if it stays within the tool's static
// declaration; every other tool, and every failed or out-of-bounds answer,
// gets the static annotations. Deployer rules, the rules pack, overrides and
// trust levels are other Resolvers that wrap or replace this one.
type UpstreamOrStatic struct {
	// Logger receives refused and failed upstream resolutions. Nil
	// discards them.
	Logger *slog.Logger
}

// Resolve implements [Resolver].
func (u UpstreamOrStatic) Resolve(ctx context.Context, q *ResolveQuery) (*call.Resolution, error) {
	static := Static(q.Tool)
	if !q.Tool.Resolvable || q.Upstream == nil {
		return static, nil
	}
	logger := u.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	res, _, err := q.Upstream.Resolve(ctx, q.Tool.Name, q.RawArguments)
	if err != nil {
		logger.WarnContext(ctx, "upstream tools/resolve failed; static annotations used", "server", q.Tool.Upstream, "tool", q.Tool.Name, "error", text.Sanitize(err.Error()))
		return static, nil
	}
	got, err := fromUpstream(res, q.Tool.Name)
	if err != nil {
		logger.WarnContext(ctx, "upstream tools/resolve answer refused; static annotations used", "server", q.Tool.Upstream, "tool", q.Tool.Name, "reason", err)
		return static, nil
	}
	if over := Exceeds(got, static); len(over) > 0 {
		logger.WarnContext(ctx, "upstream resolution claims more than its static declaration allows; static annotations used",
			"server", q.Tool.Upstream, "tool", q.Tool.Name, "exceeds", over)
		return static, nil
	}
	return got, nil
}

// fromUpstream reads an upstream's tools/resolve answer of either shape,
// as the project's client reads one ([resolve.ReadResult]), and refuses
// hints that contradict its annotations.
func fromUpstream(res *preflight.ResolveResult, name string) (*call.Resolution, error) {
	a, err := resolve.ReadResult(res, name)
	if err != nil {
		return nil, err
	}
	if cs := hints.Contradictions(a.Annotations, a.Hints); len(cs) > 0 {
		var msgs []string
		for _, c := range cs {
			msgs = append(msgs, c.String())
		}
		return nil, fmt.Errorf("hints contradict the annotations: %s", strings.Join(msgs, "; "))
	}
	out := &call.Resolution{Source: "upstream"}
	out.Annotations, out.Hints, out.SecuritySchemes = a.Annotations, a.Hints, a.SecuritySchemes
	return out, nil
}

// Exceeds lists where r claims less risk than the static resolution s
// allows, by the project's one bounds check ([hints.Exceeds]), as the
// keys that exceed.
func Exceeds(r, s *call.Resolution) []string {
	var out []string
	for _, x := range hints.Exceeds(hints.Declaration{Annotations: s.Annotations, Hints: s.Hints}, hints.Declaration{Annotations: r.Annotations, Hints: r.Hints}) {
		out = append(out, x.Key)
	}
	return out
}
