package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// UpstreamResolver asks an upstream server's tools/resolve (either
// shape) about one call. name is the upstream's own name for the tool;
// args must not be modified. An error carrying JSON-RPC code -32602 means
// the upstream rejected the arguments.
type UpstreamResolver interface {
	ResolveTool(ctx context.Context, name string, args map[string]any) (*preflight.ResolveResult, error)
}

// UpstreamFunc adapts a function to [UpstreamResolver].
type UpstreamFunc func(ctx context.Context, name string, args map[string]any) (*preflight.ResolveResult, error)

// ResolveTool calls f.
func (f UpstreamFunc) ResolveTool(ctx context.Context, name string, args map[string]any) (*preflight.ResolveResult, error) {
	return f(ctx, name, args)
}

// Session returns an [UpstreamResolver] that sends tools/resolve on cs.
// The client behind cs must be able to send it ([resolve.NewClient] or
// [resolve.EnableClient]); whether it declares the extension decides the
// shape of the answers.
func Session(cs *mcp.ClientSession) UpstreamResolver {
	return UpstreamFunc(func(ctx context.Context, name string, args map[string]any) (*preflight.ResolveResult, error) {
		return resolve.Resolve(ctx, cs, name, args)
	})
}

// rejectsArguments reports whether err is the upstream's -32602.
func rejectsArguments(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == preflight.CodeInvalidParams
}

// answer is an upstream's tools/resolve result, read.
type answer struct {
	ann     preflight.Annotations
	hints   hints.Hints
	meta    map[string]any
	schemes []preflight.SecurityScheme
	shape   string
}

// readAnswer checks res as an answer about tool name, in either shape,
// as the project's client reads one ([resolve.ReadResult]).
func readAnswer(res *preflight.ResolveResult, name string) (*answer, error) {
	r, err := resolve.ReadResult(res, name)
	if err != nil {
		return nil, err
	}
	a := answer{ann: r.Annotations, hints: r.Hints, meta: r.Meta, schemes: r.SecuritySchemes, shape: r.Shape}
	if cs := hints.Contradictions(a.ann, a.hints); len(cs) > 0 {
		msgs := make([]string, len(cs))
		for i, c := range cs {
			msgs[i] = c.String()
		}
		return nil, fmt.Errorf("hints contradict the annotations: %s", strings.Join(msgs, "; "))
	}
	return &a, nil
}
