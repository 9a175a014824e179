package resolve_test

import (
	"context"
	"errors"
	"maps"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// connect connects client to url in the given era.
func connect(t *testing.T, client *mcp.Client, url, era string) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientSessionOptions
	if era != preflight.ProtocolStateless {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: era}
	}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listed(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func TestPreflight(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	ctx := context.Background()
	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		t.Run(era, func(t *testing.T) {
			cs := connect(t, resolve.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), f.URL, era)
			tools := listed(t, cs)
			mf := tools[filetool.Name]
			if !preflight.IsResolvable(mf) {
				t.Fatalf("manage_files not marked resolvable for a client that declared the extension: %v", mf.Meta)
			}
			for _, c := range []struct {
				action          string
				confirm, retry  bool
				readOnly, destr bool
				effect          hints.Effect
			}{
				{"read", false, true, true, false, hints.EffectRead},
				{"append", false, false, false, false, hints.EffectWrite},
				{"replace", true, true, false, true, hints.EffectWrite},
				{"delete", true, true, false, true, hints.EffectDelete},
			} {
				d, err := resolve.Preflight(ctx, cs, mf, map[string]any{"path": "a.txt", "action": c.action, "content": "x"}, nil)
				if err != nil {
					t.Fatalf("%s: %v", c.action, err)
				}
				e := d.Effective
				if !d.Resolved || d.Shape != "extension" || d.Fallback != nil {
					t.Errorf("%s: resolved=%v shape=%q fallback=%v", c.action, d.Resolved, d.Shape, d.Fallback)
				}
				if d.NeedsConfirmation() != c.confirm || d.SafeToRetry() != c.retry {
					t.Errorf("%s: confirm=%v retry=%v, want %v %v", c.action, d.NeedsConfirmation(), d.SafeToRetry(), c.confirm, c.retry)
				}
				if e.ReadOnly != (policy.Value[bool]{Value: c.readOnly, Source: policy.SourceResolved}) ||
					e.Destructive.Value != c.destr || e.Effect != (policy.Value[hints.Effect]{Value: c.effect, Source: policy.SourceResolved}) {
					t.Errorf("%s: effective = %+v", c.action, e)
				}
			}
			// The decision's call uses exactly the resolved arguments.
			d, err := resolve.Preflight(ctx, cs, mf, map[string]any{"path": "b.txt", "action": "append", "content": "hi"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Call(ctx, cs)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}

			// Not resolvable: static values, no request.
			d, err = resolve.Preflight(ctx, cs, tools["plain"], map[string]any{"path": "x"}, nil)
			if err != nil || d.Resolved || d.Fallback != nil {
				t.Fatalf("plain: %+v %v", d, err)
			}
			if d.Effective.ReadOnly.Source != policy.SourceDefault || !d.NeedsConfirmation() {
				t.Errorf("plain: a tool without annotations is treated as the protocol default (destructive): %+v", d.Effective)
			}

			// -32602: do not call. The nil Decision that comes with the
			// error is safe to use: it needs confirmation, is not safe to
			// retry, and makes no call.
			d, err = resolve.Preflight(ctx, cs, mf, map[string]any{"path": "a", "action": "shred"}, nil)
			if !errors.Is(err, resolve.ErrInvalidArguments) {
				t.Errorf("invalid arguments: err = %v, want ErrInvalidArguments", err)
			}
			if d != nil || !d.NeedsConfirmation() || d.SafeToRetry() {
				t.Errorf("invalid arguments: decision %+v; want nil, needing confirmation, not safe to retry", d)
			}
			if res, err := d.Call(ctx, cs); res != nil || err == nil || !strings.Contains(err.Error(), "the call was not made") {
				t.Errorf("invalid arguments: Call on the nil decision = %+v, %v; want no call and an error", res, err)
			}

			// -32603 on a tool without static annotations: surfaced, with
			// the conservative defaults still in the decision.
			d, err = resolve.Preflight(ctx, cs, tools["fails"], map[string]any{"path": "a"}, nil)
			if !errors.Is(err, resolve.ErrResolutionFailed) || d == nil || d.Fallback == nil || !d.NeedsConfirmation() {
				t.Errorf("fails: d=%+v err=%v; want a surfaced error and a conservative decision", d, err)
			}

			// -32603 on a tool with static annotations: fall back, or abort.
			liar := tools["liar"]
			d, err = resolve.Preflight(ctx, cs, liar, map[string]any{"path": "a"}, nil)
			if err != nil || d.Resolved || d.Fallback == nil || !d.Effective.ReadOnly.Value || d.Effective.ReadOnly.Source != policy.SourceStatic {
				t.Errorf("liar: d=%+v err=%v; want the static read-only fallback", d, err)
			}
			_, err = resolve.Preflight(ctx, cs, liar, map[string]any{"path": "a"}, &resolve.ClientOptions{AbortOnInternalError: true})
			if !errors.Is(err, resolve.ErrResolutionFailed) {
				t.Errorf("liar with AbortOnInternalError: err = %v", err)
			}

			// A deployer's override wins.
			d, err = resolve.Preflight(ctx, cs, mf, map[string]any{"path": "a", "action": "read"},
				&resolve.ClientOptions{Overrides: map[string]hints.Hints{filetool.Name: {RequiresConfirmation: hints.Bool(true)}}})
			if err != nil || !d.NeedsConfirmation() || d.Effective.RequiresConfirmation.Source != policy.SourceOverride {
				t.Errorf("override: %+v %v", d, err)
			}
		})
	}
}

// TestPreflightSeedShape: a plain SDK client that can send tools/resolve
// but does not declare the extension gets, and understands, the seed shape.
func TestPreflightSeedShape(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		t.Run(era, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "seed", Version: "1"}, nil)
			if err := resolve.EnableClient(c); err != nil {
				t.Fatal(err)
			}
			cs := connect(t, c, f.URL, era)
			mf := listed(t, cs)[filetool.Name]
			if preflight.IsResolvable(mf) {
				t.Fatal("marker sent to a client that did not declare the extension")
			}
			d, err := resolve.Preflight(context.Background(), cs, mf, map[string]any{"path": "a", "action": "read"},
				&resolve.ClientOptions{ResolveUnmarked: true})
			if err != nil || !d.Resolved || d.Shape != "seed" || d.NeedsConfirmation() || !d.Effective.ReadOnly.Value {
				t.Fatalf("seed shape: %+v %v", d, err)
			}
		})
	}
}

// TestPreflightClientChecks: results that a server should never send are
// rejected by the client: beyond the bounds, for another tool, malformed.
// The server here is hand-written, since preflight's own refuses to send
// them.
func TestPreflightClientChecks(t *testing.T) {
	bad := map[string]*preflight.ResolveResult{
		"riskier":   {ResultType: "complete", Name: "t", Annotations: &preflight.Annotations{DestructiveHint: true, OpenWorldHint: true}},
		"othername": {ResultType: "complete", Name: "other", Annotations: &preflight.Annotations{ReadOnlyHint: true}},
		"malformed": {ResultType: "complete", Name: "t"},
		"badhint": {ResultType: "complete", Name: "t", Annotations: &preflight.Annotations{ReadOnlyHint: true},
			ResultBase: mcp.ResultBase{Meta: mcp.Meta{preflight.MetaPolicyHints: map[string]any{"effect": "shred"}}}},
		"scalarhints": {ResultType: "complete", Name: "t", Annotations: &preflight.Annotations{ReadOnlyHint: true},
			ResultBase: mcp.ResultBase{Meta: mcp.Meta{preflight.MetaPolicyHints: "read"}}},
	}
	// Scalar mcp.dev/ keys in an extension-shape result are not extension
	// metadata: ignored, as the extension asks, not a failure.
	ignored := &preflight.ResolveResult{ResultType: "complete", Name: "ignored", Annotations: &preflight.Annotations{ReadOnlyHint: true},
		ResultBase: mcp.ResultBase{Meta: mcp.Meta{preflight.MetaEffect: "shred", preflight.MetaRequiresConfirmation: true}}}
	s := mcp.NewServer(&mcp.Implementation{Name: "rogue", Version: "1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	for _, name := range append(slices.Collect(maps.Keys(bad)), "ignored") {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: readOnly,
			Meta: mcp.Meta{preflight.ExtensionToolResolution: preflight.ResolvableMarker()}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	err := mcp.AddReceivingCustomMethod(s, preflight.MethodResolve,
		func(_ context.Context, _ *mcp.ServerSession, p *preflight.ResolveParams) (*preflight.ResolveResult, error) {
			if p.Name == "ignored" {
				return ignored, nil
			}
			r := *bad[p.Name]
			if r.Name == "t" {
				r.Name = p.Name
			}
			return &r, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// A tool whose static hints contradict its static annotations.
	s.AddTool(&mcp.Tool{Name: "muddled", InputSchema: map[string]any{"type": "object"},
		Meta: mcp.Meta{preflight.MetaEffect: "read", preflight.MetaIdempotent: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer hs.Close()
	cs := connect(t, resolve.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil), hs.URL, preflight.ProtocolStateless)
	tools := listed(t, cs)
	t.Run("contradiction", func(t *testing.T) {
		d, err := resolve.Preflight(context.Background(), cs, tools["muddled"], map[string]any{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Contradictions) != 1 || d.Contradictions[0].Key != preflight.MetaEffect {
			t.Errorf("contradictions = %v, want the read effect of a tool that is not read-only", d.Contradictions)
		}
		if !d.NeedsConfirmation() {
			t.Error("a tool with default annotations needs confirmation whatever its effect hint says")
		}
	})
	t.Run("ignored", func(t *testing.T) {
		d, err := resolve.Preflight(context.Background(), cs, tools["ignored"], map[string]any{}, &resolve.ClientOptions{AbortOnInternalError: true})
		if err != nil || !d.Resolved || d.NeedsConfirmation() || d.Effective.Effect != (policy.Value[hints.Effect]{Value: hints.EffectRead, Source: policy.SourceDerived}) {
			t.Errorf("want the scalar keys ignored and the hints derived from the resolution; got %+v, %v", d, err)
		}
	})
	for name := range bad {
		t.Run(name, func(t *testing.T) {
			d, err := resolve.Preflight(context.Background(), cs, tools[name], map[string]any{}, nil)
			if err != nil || d.Resolved || d.Fallback == nil || !d.Effective.ReadOnly.Value {
				t.Errorf("want a fallback to the static read-only annotations; got %+v, %v", d, err)
			}
			if _, err := resolve.Preflight(context.Background(), cs, tools[name], map[string]any{}, &resolve.ClientOptions{AbortOnInternalError: true}); !errors.Is(err, resolve.ErrResolutionFailed) {
				t.Errorf("AbortOnInternalError: err = %v", err)
			}
		})
	}
}

// TestPreflightMethodNotFound: a server without tools/resolve (-32601)
// leaves the static annotations in force.
func TestPreflightMethodNotFound(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "static", Version: "1"}, nil)
	tool := filetool.Tool()
	tool.Annotations = filetool.Table.Static().Annotations.ToolAnnotations("")
	mcp.AddTool(s, tool, func(context.Context, *mcp.CallToolRequest, filetool.Args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		t.Run(era, func(t *testing.T) {
			hs := httptest.NewServer(endpoint.NewHandler(s, nil))
			defer hs.Close()
			cs := connect(t, resolve.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil), hs.URL, era)
			mf := listed(t, cs)[filetool.Name]
			d, err := resolve.Preflight(context.Background(), cs, mf, map[string]any{"path": "a", "action": "read"},
				&resolve.ClientOptions{ResolveUnmarked: true})
			if err != nil || d.Resolved || d.Fallback == nil || !d.NeedsConfirmation() || d.Effective.Destructive.Source != policy.SourceStatic {
				t.Errorf("want the static worst case; got %+v, %v", d, err)
			}
			cs.Close()
		})
	}
}
