package resolve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/resolve"
)

// agreeCase is a static declaration and a resolution of one tool.
type agreeCase struct {
	name             string
	static, resolved hints.Declaration
}

func agreeCases() []agreeCase {
	d := func(a preflight.Annotations, h hints.Hints) hints.Declaration {
		return hints.Declaration{Annotations: a, Hints: h}
	}
	ro := preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}
	additive := preflight.Annotations{}
	destroy := preflight.Annotations{DestructiveHint: true, IdempotentHint: true}
	open := preflight.Annotations{OpenWorldHint: true}
	return []agreeCase{
		{"read-only resolves read-only", d(ro, hints.Hints{Effect: hints.EffectRead}), d(ro, hints.Hints{Effect: hints.EffectRead})},
		{"read-only resolves to a write", d(ro, hints.Hints{}), d(additive, hints.Hints{})},
		{"additive resolves destructive", d(additive, hints.Hints{}), d(destroy, hints.Hints{})},
		{"idempotent resolves not idempotent", d(destroy, hints.Hints{}), d(preflight.Annotations{DestructiveHint: true}, hints.Hints{})},
		{"closed world resolves open", d(additive, hints.Hints{}), d(open, hints.Hints{})},
		{"the defaults bound a destructive call", d(preflight.DefaultAnnotations, hints.Hints{}), d(preflight.DefaultAnnotations, hints.Hints{})},
		{"worst case resolves to a read", d(preflight.DefaultAnnotations, hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true)}),
			d(ro, hints.Hints{Effect: hints.EffectRead, RequiresConfirmation: hints.Bool(false)})},
		{"write resolves to a delete", d(destroy, hints.Hints{Effect: hints.EffectWrite}), d(destroy, hints.Hints{Effect: hints.EffectDelete})},
		{"internal resolves restricted", d(ro, hints.Hints{ResultSensitivity: hints.SensitivityInternal}), d(ro, hints.Hints{ResultSensitivity: hints.SensitivityRestricted})},
		{"confidential resolves public", d(ro, hints.Hints{ResultSensitivity: hints.SensitivityConfidential}), d(ro, hints.Hints{ResultSensitivity: hints.SensitivityPublic})},
		{"idempotent by hint resolves not idempotent", d(additive, hints.Hints{Idempotent: hints.Bool(true)}), d(additive, hints.Hints{Idempotent: hints.Bool(false)})},
		{"idempotent by hint, the resolution's derived", d(additive, hints.Hints{Idempotent: hints.Bool(true)}), d(additive, hints.Hints{})},
	}
}

// agreeTool is case i's tool as listed: its static declaration, marked
// resolvable.
func agreeTool(i int, c agreeCase) *mcp.Tool {
	meta := c.static.Hints.Write(nil)
	meta[preflight.ExtensionToolResolution] = preflight.ResolvableMarker()
	return &mcp.Tool{
		Name:        fmt.Sprintf("t%d", i),
		Description: c.name,
		Annotations: c.static.Annotations.ToolAnnotations(""),
		Meta:        meta,
		InputSchema: map[string]any{"type": "object"},
	}
}

func noopHandler(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// TestBoundsAgree: the resolve server, the resolve client and lint judge
// "riskier than the static declaration" alike, as hints.Exceeds does. The
// server serves each case and withholds the resolutions beyond their
// bounds; a server that checks nothing sends them all, and the client
// rejects, and lint reports, exactly the same ones.
func TestBoundsAgree(t *testing.T) {
	ctx := context.Background()
	cases := agreeCases()

	// The resolve server.
	honest := mcp.NewServer(&mcp.Implementation{Name: "honest", Version: "v1"}, nil)
	rs := resolve.NewServer(honest, nil)
	for i, c := range cases {
		if cs := hints.Contradictions(c.resolved.Annotations, c.resolved.Hints); len(cs) > 0 {
			t.Fatalf("%s: the resolution contradicts itself (%v): the server would refuse it for that", c.name, cs)
		}
		r := resolve.Resolution{Annotations: c.resolved.Annotations, Hints: c.resolved.Hints}
		rs.AddTool(agreeTool(i, c), noopHandler, resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
			return r, nil
		}))
	}
	hs := httptest.NewServer(endpoint.NewHandler(honest, nil))
	defer hs.Close()

	// A server that checks nothing: its tools are added with the
	// protocol's defaults, which bound every resolution, and a middleware
	// lists them with the cases' static declarations instead.
	lax := mcp.NewServer(&mcp.Implementation{Name: "lax", Version: "v1"}, nil)
	lax.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok {
				out := *l
				out.Tools = make([]*mcp.Tool, len(l.Tools))
				for j, tool := range l.Tools {
					var i int
					fmt.Sscanf(tool.Name, "t%d", &i)
					out.Tools[j] = agreeTool(i, cases[i])
				}
				return &out, err
			}
			return res, err
		}
	})
	lrs := resolve.NewServer(lax, nil)
	for i, c := range cases {
		tool := agreeTool(i, c)
		tool.Annotations, tool.Meta = nil, nil
		r := resolve.Resolution{Annotations: c.resolved.Annotations, Hints: c.resolved.Hints}
		lrs.AddTool(tool, noopHandler, resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
			return r, nil
		}))
	}
	ls := httptest.NewServer(endpoint.NewHandler(lax, nil))
	defer ls.Close()

	// The client, on the lax server.
	cs := connect(t, resolve.NewClient(&mcp.Implementation{Name: "agree", Version: "1"}, nil), ls.URL, preflight.ProtocolStateless)
	tools := listed(t, cs)
	for i, c := range cases {
		name := fmt.Sprintf("t%d", i)
		if got := preflight.AnnotationsOf(tools[name].Annotations); got != c.static.Annotations {
			t.Fatalf("%s listed with %+v, want the static %+v", name, got, c.static.Annotations)
		}
	}

	// Lint, on the lax server, as a raw peer that declares nothing (the
	// seed's shape).
	target, err := lint.Observe(ctx, "lax", nil, &peerSession{t: t, p: wiretest.Stateless(ls.URL, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string]bool{}
	for _, f := range lint.Findings(target) {
		if f.Check == lint.CheckResolveBounds {
			flagged[f.Tool] = true
		}
	}

	peer := wiretest.Stateless(hs.URL, nil)
	exceeding := 0
	for i, c := range cases {
		name := fmt.Sprintf("t%d", i)
		t.Run(c.name, func(t *testing.T) {
			over := hints.Exceeds(c.static, c.resolved)
			want := len(over) > 0
			if want {
				exceeding++
			}

			r := peer.Call(t, "tools/resolve", map[string]any{"name": name, "arguments": map[string]any{}})
			withheld := r.Error != nil && r.Error.Code == preflight.CodeInternalError
			if r.Error != nil && !withheld {
				t.Fatalf("server: %+v", r.Error)
			}

			d, err := resolve.Preflight(ctx, cs, tools[name], map[string]any{}, &resolve.ClientOptions{AbortOnInternalError: true})
			rejected := errors.Is(err, resolve.ErrResolutionFailed)
			if err != nil && !rejected {
				t.Fatalf("client: %v", err)
			}
			if !rejected && !d.Resolved {
				t.Fatalf("client: neither resolved nor rejected: %v", d.Fallback)
			}

			if withheld != want || rejected != want || flagged[name] != want {
				t.Errorf("Exceeds %v; server withheld %v, client rejected %v, lint reported %v", over, withheld, rejected, flagged[name])
			}
		})
	}
	if exceeding == 0 || exceeding == len(cases) {
		t.Errorf("%d of %d cases exceed their bounds: the cases do not tell agreement from always or never", exceeding, len(cases))
	}
}

// peerSession is a [lint.Session] on a raw 2026-07-28 peer: results as
// they came over the wire.
type peerSession struct {
	t testing.TB
	p *wiretest.Peer
}

func (s *peerSession) InitializeResult() json.RawMessage {
	return s.result(s.p.Call(s.t, "server/discover", nil))
}

func (s *peerSession) ListTools(context.Context) ([]json.RawMessage, error) {
	return []json.RawMessage{s.result(s.p.Call(s.t, "tools/list", nil))}, nil
}

func (s *peerSession) Resolve(_ context.Context, name string, args map[string]any) (json.RawMessage, error) {
	r := s.p.Call(s.t, "tools/resolve", map[string]any{"name": name, "arguments": args})
	if r.Error != nil {
		return nil, &jsonrpc.Error{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	}
	return s.result(r), nil
}

func (s *peerSession) result(r *wiretest.Response) json.RawMessage {
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Raw, &msg); err != nil || msg.Result == nil {
		s.t.Fatalf("no result: %s", r.Raw)
	}
	return msg.Result
}
