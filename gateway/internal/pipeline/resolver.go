package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// Resolver works out what one call of an aggregated tool will do: its four
// annotations and its policy hints. The gateway asks it for every
// tools/resolve a client sends (both shapes) and, through the resolve
// stage, before every tools/call. It must be cheap, free of side effects
// other than asking the upstream, and safe for concurrent use.
//
// The gateway checks every answer against the tool's static declaration
// before a client sees it (package resolve withholds a resolution riskier
// than the tools/list annotations), so a Resolver cannot make a tool look
// safer than its upstream declared it; it can only refine within the
// bounds, or return the static annotations.
type Resolver interface {
	Resolve(ctx context.Context, q *ResolveQuery) (*Resolution, error)
}

// ResolveQuery is the call a [Resolver] is asked about.
type ResolveQuery struct {
	// Tool is the aggregated tool: its upstream, names, raw and decoded
	// static definition, and whether the upstream resolves it itself.
	Tool *catalog.Tool
	// Arguments are the call's complete arguments, decoded; RawArguments
	// the same as the client sent them. Do not modify them.
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
func Static(t *catalog.Tool) *Resolution {
	r := &Resolution{Source: "static"}
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
func (u UpstreamOrStatic) Resolve(ctx context.Context, q *ResolveQuery) (*Resolution, error) {
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
		logger.WarnContext(ctx, "upstream tools/resolve failed; static annotations used", "server", q.Tool.Upstream, "tool", q.Tool.Name, "error", upstream.Sanitize(err.Error()))
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
func fromUpstream(res *preflight.ResolveResult, name string) (*Resolution, error) {
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
	out := &Resolution{Source: "upstream"}
	out.Annotations, out.Hints, out.SecuritySchemes = a.Annotations, a.Hints, a.SecuritySchemes
	return out, nil
}

// Exceeds lists where r claims less risk than the static resolution s
// allows, by the project's one bounds check ([hints.Exceeds]), as the
// keys that exceed.
func Exceeds(r, s *Resolution) []string {
	var out []string
	for _, x := range hints.Exceeds(hints.Declaration{Annotations: s.Annotations, Hints: s.Hints}, hints.Declaration{Annotations: r.Annotations, Hints: r.Hints}) {
		out = append(out, x.Key)
	}
	return out
}

// AsResolution converts a Resolution for package resolve.
func (r *Resolution) AsResolution() *resolve.Resolution {
	rr := r.Resolution
	return &rr
}
