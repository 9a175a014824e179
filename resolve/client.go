package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

// Errors returned by [Preflight]. Match them with errors.Is.
var (
	// ErrInvalidArguments: the server answered -32602. The tool must not
	// be called with these arguments unchanged.
	ErrInvalidArguments = errors.New("resolve: the server rejected the call's arguments")
	// ErrResolutionFailed: resolution failed and the client could not, or
	// was told not to, fall back to the static definition.
	ErrResolutionFailed = errors.New("resolve: resolution failed")
)

// ClientOptions configure [Preflight]. The zero value follows the seed and
// the extension: resolve marked tools, fall back to the static definition
// on any failure except invalid arguments.
type ClientOptions struct {
	// AbortOnInternalError makes a -32603 answer, or a resolution that
	// fails the client's checks (malformed, wrong name, beyond the static
	// bounds), an error wrapping [ErrResolutionFailed] instead of a
	// fallback to the static definition. False falls back.
	AbortOnInternalError bool
	// ResolveUnmarked sends tools/resolve even for tools without the
	// extension's marker, for servers that speak only the seed shape
	// (whose top-level "resolve": true the SDK's Tool type drops). A
	// -32601 answer then falls back quietly. False resolves only marked
	// tools.
	ResolveUnmarked bool
	// Overrides are a deployer's hints by tool name; they win over the
	// server's. Nil means none.
	Overrides map[string]hints.Hints
}

// NewClient returns an [mcp.Client] ready for [Preflight]: it declares the
// tool-resolution extension, and the extension-shape result metadata
// [preflight.MetaPolicyHints] and [preflight.MetaSecuritySchemes], in its
// capabilities (and so on every request under 2026-07-28), and can send
// tools/resolve. opts may be nil; its Capabilities are copied, not
// modified.
func NewClient(impl *mcp.Implementation, opts *mcp.ClientOptions) *mcp.Client {
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	var caps mcp.ClientCapabilities
	if o.Capabilities != nil {
		caps = *o.Capabilities
	} else {
		// The SDK's default when Capabilities is nil.
		//lint:ignore SA1019 kept as the SDK's default, so a client made here declares what an mcp.NewClient one does
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	ext := make(map[string]any, len(caps.Extensions)+1)
	for k, v := range caps.Extensions {
		ext[k] = v
	}
	caps.Extensions = ext
	caps.AddExtension(preflight.ExtensionToolResolution, nil)
	caps.AddExtension(preflight.MetaPolicyHints, nil)
	caps.AddExtension(preflight.MetaSecuritySchemes, nil)
	o.Capabilities = &caps
	c := mcp.NewClient(impl, &o)
	if err := EnableClient(c); err != nil {
		panic(err) // unreachable: tools/resolve is not a standard method
	}
	return c
}

// EnableClient lets c send tools/resolve. Use it for clients made with
// [mcp.NewClient]; they then speak the seed shape unless their
// capabilities declare the extension.
func EnableClient(c *mcp.Client) error {
	return mcp.AddSendingCustomMethod[*preflight.ResolveParams, *preflight.ResolveResult](c, preflight.MethodResolve)
}

// Resolve sends one tools/resolve request and returns the raw result, in
// whichever shape the server chose. Most callers want [Preflight].
func Resolve(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*preflight.ResolveResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	return mcp.CallCustomMethod[*preflight.ResolveParams, *preflight.ResolveResult](ctx, cs, preflight.MethodResolve,
		&preflight.ResolveParams{Name: name, Arguments: args})
}

// A Decision is what is known about one call before it is made.
type Decision struct {
	// Tool is the tool as listed.
	Tool *mcp.Tool
	// Arguments are the arguments the decision is about (a copy). A
	// decision says nothing about other arguments: resolve again.
	Arguments map[string]any
	// Effective holds the effective annotations and hints, each with
	// where it came from.
	Effective policy.Effective
	// Resolved reports whether a resolution for these arguments was used.
	Resolved bool
	// Shape is "extension" or "seed" when Resolved, else "".
	Shape string
	// Fallback is why the static definition was used after trying to
	// resolve; nil if resolution succeeded or was not attempted.
	Fallback error
	// Meta is the resolution's _meta (seed shape: the resolved tool's).
	// Its policy hints are in Effective; in the extension shape they
	// travel as the object under [preflight.MetaPolicyHints], in the seed
	// shape as the scalar mcp.dev/ keys.
	Meta map[string]any
	// SecuritySchemes are the resolution's authorization requirements,
	// if it gave any.
	SecuritySchemes []preflight.SecurityScheme
	// Result is the tools/resolve result as received, nil if there was
	// none.
	Result *preflight.ResolveResult
	// Contradictions are the hints the server gave (resolved or static,
	// not the derived ones) that disagree with the effective annotations.
	// Hints are advisory: a client that finds some should trust the
	// annotations, or ask the user.
	Contradictions []hints.Contradiction
}

// NeedsConfirmation reports whether the call should be confirmed by the
// user first. A nil Decision (Preflight failed) needs confirmation.
func (d *Decision) NeedsConfirmation() bool { return d == nil || d.Effective.NeedsConfirmation() }

// SafeToRetry reports whether the call may be repeated after a failure.
// A nil Decision is not safe to retry.
func (d *Decision) SafeToRetry() bool { return d != nil && d.Effective.SafeToRetry() }

// Call makes the call the decision is about, with exactly its arguments.
// A nil Decision (Preflight failed, for instance on invalid arguments)
// makes no call and returns an error.
func (d *Decision) Call(ctx context.Context, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
	if d == nil || d.Tool == nil {
		return nil, errNoDecision
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: d.Tool.Name, Arguments: d.Arguments})
}

var errNoDecision = errors.New("resolve: no decision to call: Preflight returned an error, so the call was not made")

// Preflight resolves the call of tool (as listed by tools/list) with args
// and decides about it. It follows the seed's client requirements and the
// extension's error table:
//
//   - only tools marked resolvable are resolved (see
//     [ClientOptions.ResolveUnmarked]);
//   - -32602 returns an error wrapping [ErrInvalidArguments]: do not call;
//   - -32603, and results that are malformed, name another tool or break
//     the monotonic bounds of the static annotations, fall back to the
//     static definition, or fail if [ClientOptions.AbortOnInternalError];
//   - -32601, -32021 and transport errors fall back to the static
//     definition;
//   - a fallback for a tool with no static annotations is surfaced: the
//     Decision (holding the protocol's conservative defaults) comes with
//     an error wrapping [ErrResolutionFailed].
//
// opts may be nil.
func Preflight(ctx context.Context, cs *mcp.ClientSession, tool *mcp.Tool, args map[string]any, opts *ClientOptions) (*Decision, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	if tool == nil {
		return nil, errors.New("resolve.Preflight: nil tool")
	}
	argsCopy, err := copyArguments(args)
	if err != nil {
		return nil, fmt.Errorf("resolve.Preflight: arguments of %q: %w", tool.Name, err)
	}
	staticHints, _ := hints.Read(tool.Meta) // invalid static hints are ignored; lint reports them
	in := policy.Input{Static: tool.Annotations, StaticHints: staticHints, Overrides: opts.Overrides[tool.Name]}
	d := &Decision{Tool: tool, Arguments: argsCopy}
	decide := func() {
		d.Effective = policy.Evaluate(in)
		d.Contradictions = hints.Contradictions(d.Effective.Annotations(), d.Effective.GivenHints())
	}

	if !preflight.IsResolvable(tool) && !opts.ResolveUnmarked {
		decide()
		return d, nil
	}
	res, err := Resolve(ctx, cs, tool.Name, argsCopy)
	d.Result = res
	if err == nil {
		err = d.accept(tool, res, &in)
	} else if undecodable(err) {
		err = fmt.Errorf("%w: %w", errBadResult, err)
	}
	if err == nil {
		decide()
		return d, nil
	}
	code, isRPC := errCode(err)
	switch {
	case isRPC && code == preflight.CodeInvalidParams:
		return nil, fmt.Errorf("%w: %w", ErrInvalidArguments, err)
	case (errors.Is(err, errBadResult) || isRPC && code == preflight.CodeInternalError) && opts.AbortOnInternalError:
		return nil, fmt.Errorf("%w for %q: %w", ErrResolutionFailed, tool.Name, err)
	}
	d.Fallback = err
	decide()
	// The seed: with no static annotations to fall back to, surface the
	// error. A tool resolved only because of ResolveUnmarked was a probe,
	// and its failure is not the server's.
	if tool.Annotations == nil && preflight.IsResolvable(tool) {
		return d, fmt.Errorf("%w for %q and the tool has no static annotations: %w", ErrResolutionFailed, tool.Name, err)
	}
	return d, nil
}

var errBadResult = errors.New("unusable tools/resolve result")

// An Answer is a tools/resolve result as read by [ReadResult], in either
// shape.
type Answer struct {
	Name            string
	Shape           string // "seed" or "extension"
	Annotations     preflight.Annotations
	Hints           hints.Hints
	Meta            map[string]any
	SecuritySchemes []preflight.SecurityScheme
}

// ReadResult reads res as an answer about the tool named name: in the
// seed shape from the returned tool, in the extension shape from the
// result and its negotiated _meta objects (scalar mcp.dev/ keys are not
// extension metadata there, and are ignored as the extension asks). It
// checks the shape, the name and the hints' values, not the bounds: hold
// the answer to the tool's static declaration with [hints.Exceeds].
func ReadResult(res *preflight.ResolveResult, name string) (*Answer, error) {
	var a Answer
	var err error
	switch {
	case res == nil:
		return nil, fmt.Errorf("%w: empty result", errBadResult)
	case res.SeedShape():
		if res.Tool.Tool == nil {
			return nil, fmt.Errorf("%w: empty tool", errBadResult)
		}
		a.Name, a.Annotations, a.Meta = res.Tool.Name, preflight.AnnotationsOf(res.Tool.Annotations), res.Tool.Meta
		a.Shape, a.SecuritySchemes = "seed", res.Tool.SecuritySchemes
		a.Hints, err = hints.Read(a.Meta)
	default:
		if res.ResultType != preflight.ResultTypeComplete || res.Annotations == nil {
			return nil, fmt.Errorf("%w: neither a tool (seed shape) nor resultType %q with annotations (extension shape)", errBadResult, preflight.ResultTypeComplete)
		}
		a.Name, a.Annotations, a.Meta, a.Shape = res.Name, *res.Annotations, res.Meta, "extension"
		if v, ok := a.Meta[preflight.MetaSecuritySchemes]; ok {
			var s struct {
				SecuritySchemes []preflight.SecurityScheme `json:"securitySchemes"`
			}
			if err := remarshal(v, &s); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", errBadResult, preflight.MetaSecuritySchemes, err)
			}
			a.SecuritySchemes = s.SecuritySchemes
		}
		a.Hints, err = hints.ReadObject(a.Meta[preflight.MetaPolicyHints])
	}
	if a.Name != name {
		return nil, fmt.Errorf("%w: resolved %q, asked for %q", errBadResult, a.Name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadResult, err)
	}
	return &a, nil
}

// accept checks res and records it in d and in.
func (d *Decision) accept(tool *mcp.Tool, res *preflight.ResolveResult, in *policy.Input) error {
	a, err := ReadResult(res, tool.Name)
	if err != nil {
		return err
	}
	static := hints.Declaration{Annotations: preflight.AnnotationsOf(tool.Annotations), Hints: in.StaticHints}
	if over := hints.Exceeds(static, hints.Declaration{Annotations: a.Annotations, Hints: a.Hints}); len(over) > 0 {
		return fmt.Errorf("%w: riskier than the static declaration in %s", errBadResult, excessText(over))
	}
	// Only a result that passed every check reaches the decision.
	in.Resolved, in.ResolvedHints = &a.Annotations, a.Hints
	d.Resolved, d.Meta, d.Shape, d.SecuritySchemes = true, a.Meta, a.Shape, a.SecuritySchemes
	return nil
}

// undecodable reports whether err says the result was not a
// tools/resolve result at all (JSON of another shape).
func undecodable(err error) bool {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	return errors.As(err, &te) || errors.As(err, &se)
}

// copyArguments returns a deep copy of args, as it will travel.
func copyArguments(args map[string]any) (map[string]any, error) {
	if args == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}
