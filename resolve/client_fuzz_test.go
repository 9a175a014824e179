package resolve_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// fakeResolveServer is an mcp.Transport whose far end is a scripted
// server: it answers initialize (2025-11-25, declaring the extension) and
// answers every tools/resolve with the response in next, decoded by the
// SDK's own JSON-RPC decoder as a transport would decode it from the wire.
type fakeResolveServer struct {
	next atomic.Pointer[jsonrpc.Response]
}

func (s *fakeResolveServer) Connect(context.Context) (mcp.Connection, error) {
	return &fakeConn{server: s, in: make(chan jsonrpc.Message, 4), done: make(chan struct{})}, nil
}

type fakeConn struct {
	server *fakeResolveServer
	in     chan jsonrpc.Message
	done   chan struct{}
	once   sync.Once
}

var fakeInitializeResult = []byte(`{"protocolVersion":"2025-11-25",` +
	`"capabilities":{"tools":{"resolve":true},"extensions":{"io.modelcontextprotocol/tool-resolution":{}}},` +
	`"serverInfo":{"name":"fake","version":"0"}}`)

func (c *fakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil // notifications and responses: nothing to answer
	}
	var resp jsonrpc.Response
	switch req.Method {
	case "initialize":
		resp.Result = fakeInitializeResult
	case preflight.MethodResolve:
		resp = *c.server.next.Load()
	default:
		resp.Error = &jsonrpc.Error{Code: preflight.CodeMethodNotFound, Message: "method not found"}
	}
	resp.ID = req.ID
	select {
	case c.in <- &resp:
		return nil
	case <-c.done:
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *fakeConn) SessionID() string { return "" }

// fuzzResponse decodes a JSON-RPC response carrying result as the SDK's
// transports do. result is spliced in raw, so it may also add members
// (an "error", another "result"); the id is always the request's.
func fuzzResponse(result []byte) (*jsonrpc.Response, bool) {
	wire := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), result...), '}')
	m, err := jsonrpc.DecodeMessage(wire)
	if err != nil {
		return nil, false
	}
	resp, ok := m.(*jsonrpc.Response)
	return resp, ok
}

// fuzzTools are the tools Preflight is asked about, as a client lists them:
// manage_files with its derived static annotations and hints, and a tool
// with no annotations at all. Both carry the extension's marker.
func fuzzTools() []*mcp.Tool {
	f := false
	marker := preflight.ResolvableMarker()
	return []*mcp.Tool{
		{
			Name: filetool.Name,
			Annotations: &mcp.ToolAnnotations{Title: "Manage files",
				ReadOnlyHint: false, DestructiveHint: nil, IdempotentHint: false, OpenWorldHint: &f},
			Meta: mcp.Meta{
				preflight.ExtensionToolResolution:  marker,
				preflight.MetaEffect:               "delete",
				preflight.MetaIdempotent:           false,
				preflight.MetaRequiresConfirmation: true,
			},
		},
		{Name: filetool.Name, Meta: mcp.Meta{preflight.ExtensionToolResolution: marker}},
	}
}

// FuzzPreflightResult feeds arbitrary tools/resolve responses to
// resolve.Preflight through a scripted server, for a tool with static
// annotations and one without, with and without AbortOnInternalError
// (bits 0 and 1 of variant). Invariants: no panic; errors wrap
// ErrInvalidArguments (only for -32602, with no Decision) or
// ErrResolutionFailed; a Decision is for exactly the arguments asked
// about; a used resolution never exceeds the static bounds, carries
// valid hints and takes none from tools/list; a fallback uses the static (or default) annotations and
// says why; a fallback for a tool without annotations is an error; with
// AbortOnInternalError, a result that is not used (or -32603) is an error;
// the session keeps working.
func FuzzPreflightResult(f *testing.F) {
	for _, s := range []string{
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"mcp.dev/effect":"read","mcp.dev/idempotent":true,"mcp.dev/requiresConfirmation":false}}`,
		`{"tool":{"name":"manage_files","description":"d","inputSchema":{"type":"object"},"annotations":{"title":"Manage files","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false},"_meta":{"mcp.dev/effect":"delete","mcp.dev/idempotent":true,"mcp.dev/requiresConfirmation":true},"resolve":true,"securitySchemes":[{"type":"oauth2","scopes":["files"]}]}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}}`,
		`{"resultType":"complete","name":"other_tool","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"mcp.dev/effect":"shred"}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"securitySchemes":[{"type":"noauth"}]}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"securitySchemes":5}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"mcp.dev/policy-hints":{"effect":"read","requiresConfirmation":false}}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"_meta":{"mcp.dev/policy-hints":{"effect":"write"}}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"mcp.dev/policy-hints":{"effect":"shred"}}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"mcp.dev/policy-hints":"read"}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"mcp.dev/security-schemes":{"securitySchemes":[{"type":"noauth"}]}}}`,
		`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true},"_meta":{"mcp.dev/security-schemes":[{"type":"noauth"}]}}`,
		`{"resultType":"complete","name":"manage_files","annotations":5}`,
		`{"resultType":"incomplete","name":"manage_files","annotations":{}}`,
		`{"resultType":"complete","name":"manage_files"}`,
		`{"tool":{}}`,
		`{"tool":null}`,
		`{"tool":{"name":"other_tool","annotations":{"readOnlyHint":true},"securitySchemes":[{"type":"noauth"}]}}`,
		`{"tool":{"name":"manage_files"}}`,
		`{"tool":{"name":"manage_files","annotations":{"destructiveHint":false,"openWorldHint":false}}}`,
		`{}`,
		`null`,
		`[]`,
		`5`,
		`"complete"`,
		`null,"error":{"code":-32602,"message":"invalid arguments: path"}`,
		`null,"error":{"code":-32603,"message":"resolver failed"}`,
		`null,"error":{"code":-32601,"message":"method not found"}`,
		`null,"error":{"code":-32021,"message":"missing capability"}`,
		`null,"error":{"code":-32000,"message":"other"}`,
	} {
		for v := range uint8(4) {
			f.Add([]byte(s), v)
		}
	}

	ctx := context.Background()
	server := &fakeResolveServer{}
	valid, _ := fuzzResponse([]byte(`{"resultType":"complete","name":"manage_files","annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`))
	server.next.Store(valid)
	cs, err := resolve.NewClient(&mcp.Implementation{Name: "fuzz", Version: "v1"}, nil).Connect(ctx, server,
		&mcp.ClientSessionOptions{ProtocolVersion: preflight.ProtocolLegacy})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cs.Close() })
	tools := fuzzTools()

	f.Fuzz(func(t *testing.T, result []byte, variant uint8) {
		resp, ok := fuzzResponse(result)
		if !ok {
			return // not a JSON-RPC response: the transport, not the client, rejects it
		}
		tool := tools[variant&1]
		opts := &resolve.ClientOptions{AbortOnInternalError: variant&2 != 0}
		args := map[string]any{"path": "a.txt", "action": "read"}
		var code int64
		var we *jsonrpc.Error
		if resp.Error != nil {
			if !errors.As(resp.Error, &we) {
				t.Fatalf("decoded error %T", resp.Error)
			}
			code = we.Code
		}

		server.next.Store(resp)
		d, err := resolve.Preflight(ctx, cs, tool, args, opts)
		server.next.Store(valid)

		static := preflight.AnnotationsOf(tool.Annotations)
		switch {
		case errors.Is(err, resolve.ErrInvalidArguments):
			if d != nil || code != preflight.CodeInvalidParams {
				t.Fatalf("ErrInvalidArguments with decision %v for response code %d", d, code)
			}
			return
		case err != nil && !errors.Is(err, resolve.ErrResolutionFailed):
			t.Fatalf("error wraps neither ErrInvalidArguments nor ErrResolutionFailed: %v", err)
		case err == nil && d == nil:
			t.Fatal("no decision and no error")
		case d == nil:
			if !opts.AbortOnInternalError {
				t.Fatalf("no decision without AbortOnInternalError: %v", err)
			}
			return
		}
		if !reflect.DeepEqual(d.Arguments, args) || d.Tool != tool {
			t.Errorf("decision about %v %v, asked about %v %v", d.Tool.Name, d.Arguments, tool.Name, args)
		}
		eff := d.Effective
		if d.Resolved {
			if d.Fallback != nil || err != nil || resp.Error != nil {
				t.Errorf("resolved, yet fallback %v, error %v, response error %v", d.Fallback, err, resp.Error)
			}
			if d.Shape != "seed" && d.Shape != "extension" {
				t.Errorf("resolved in shape %q", d.Shape)
			}
			staticHints, _ := hints.Read(tool.Meta)
			if over := hints.Exceeds(hints.Declaration{Annotations: static, Hints: staticHints},
				hints.Declaration{Annotations: eff.Annotations(), Hints: eff.Hints()}); len(over) > 0 {
				t.Errorf("used a resolution beyond the static bounds (%v): %s", over, result)
			}
			if eff.ReadOnly.Source != policy.SourceResolved {
				t.Errorf("resolved, but readOnlyHint from %s", eff.ReadOnly.Source)
			}
			// A resolved call inherits nothing of the static worst case.
			for _, src := range []policy.Source{eff.Effect.Source, eff.IdempotentCall.Source, eff.RequiresConfirmation.Source, eff.ResultSensitivity.Source} {
				if src == policy.SourceStatic {
					t.Errorf("resolved, but a hint from tools/list: %+v", eff)
				}
			}
		} else {
			if d.Fallback == nil {
				t.Errorf("not resolved, yet no fallback reason")
			}
			if d.Shape != "" || d.SecuritySchemes != nil || d.Meta != nil {
				t.Errorf("a rejected resolution left Shape %q, SecuritySchemes %v, Meta %v in the decision", d.Shape, d.SecuritySchemes, d.Meta)
			}
			if eff.Annotations() != static {
				t.Errorf("fallback annotations %+v, static %+v", eff.Annotations(), static)
			}
			if tool.Annotations == nil && err == nil {
				t.Errorf("fallback for a tool without annotations is not surfaced: %s", result)
			}
			if opts.AbortOnInternalError && err == nil && (resp.Error == nil || code == preflight.CodeInternalError) {
				t.Errorf("AbortOnInternalError, yet %s fell back quietly: %v", result, d.Fallback)
			}
		}
		if err := eff.Hints().Validate(); err != nil || eff.Effect.Value.Rank() < 0 {
			t.Errorf("effective hints invalid: %+v: %v", eff.Hints(), err)
		}

		// The session still works.
		if d, err := resolve.Preflight(ctx, cs, tools[0], args, nil); err != nil || !d.Resolved {
			t.Fatalf("after %s: %+v, %v", result, d, err)
		}
	})
}
