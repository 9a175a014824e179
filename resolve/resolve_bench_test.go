package resolve_test

// Benchmarks of tool resolution, from the resolver alone to a round trip
// over loopback HTTP. docs/benchmarks.md has the figures and the commands
// that reproduce them.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// benchEras are the two protocol eras, newest first.
var benchEras = []string{preflight.ProtocolStateless, preflight.ProtocolLegacy}

// benchArgs are the arguments of every resolve and call in these
// benchmarks: manage_files reading one file.
func benchArgs() map[string]any { return map[string]any{"path": "a.txt", "action": "read"} }

// benchGetFile is the name of a tool resolved by a function: a path under
// public/ reads public data without authorization, any other path
// confidential data behind an OAuth scope.
const benchGetFile = "get_file"

// benchNoop is the name of a tool that does nothing, with manage_files'
// input schema, added with mcp.AddTool: a call decodes and validates the
// same arguments as a resolve, as a typed Go tool does.
const benchNoop = "noop"

// benchNoopRaw is the name of a tool that does nothing at all, added with
// mcp.Server.AddTool: the SDK hands it the raw arguments and validates
// nothing, the cheapest tools/call there is.
const benchNoopRaw = "noop_raw"

// benchFileResolver is the function resolver of get_file.
var benchFileResolver = resolve.ResolverFunc(func(_ context.Context, c *resolve.Call) (resolve.Resolution, error) {
	p, _ := c.Arguments["path"].(string)
	r := resolve.Resolution{Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}}
	r.Hints.Effect = hints.EffectRead
	if strings.HasPrefix(p, "public/") {
		r.Hints.ResultSensitivity = hints.SensitivityPublic
		r.SecuritySchemes = []preflight.SecurityScheme{{Type: "noauth"}}
	} else {
		r.Hints.ResultSensitivity = hints.SensitivityConfidential
		r.SecuritySchemes = []preflight.SecurityScheme{{Type: "oauth2", Scopes: []string{"files.read"}}}
	}
	return r, nil
})

// benchGetFileTool is get_file's static declaration: read-only, results
// up to confidential.
func benchGetFileTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        benchGetFile,
		Description: "Read a file; public/ needs no authorization",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		Meta: mcp.Meta{
			preflight.MetaEffect:            string(hints.EffectRead),
			preflight.MetaResultSensitivity: string(hints.SensitivityConfidential),
		},
	}
}

// newBenchServer returns a server with manage_files (table), get_file
// (function), and noop and noop_raw (not resolvable, same schema as
// manage_files).
func newBenchServer(tb testing.TB) *mcp.Server {
	s, _ := newBenchResolveServer(tb)
	return s
}

// newBenchResolveServer is newBenchServer, also returning the
// resolve.Server installed on it.
func newBenchResolveServer(tb testing.TB) (*mcp.Server, *resolve.Server) {
	tb.Helper()
	root, err := os.OpenRoot(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { root.Close() })
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	rs := resolve.NewServer(s, nil)
	filetool.Add(rs, root)
	type pathOnly struct {
		Path string `json:"path"`
	}
	resolve.AddTool(rs, benchGetFileTool(),
		func(context.Context, *mcp.CallToolRequest, pathOnly) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		}, benchFileResolver)
	mcp.AddTool(s, &mcp.Tool{Name: benchNoop, Description: "does nothing", InputSchema: filetool.Tool().InputSchema},
		func(context.Context, *mcp.CallToolRequest, filetool.Args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: benchNoopRaw, Description: "does nothing at all", InputSchema: filetool.Tool().InputSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return s, rs
}

// BenchmarkResolveTable measures the declarative resolver of manage_files
// on its own, one sub-benchmark per action. Goal: under 2 µs/op.
func BenchmarkResolveTable(b *testing.B) {
	ctx := context.Background()
	tool := filetool.Tool()
	for _, action := range filetool.Actions {
		b.Run("action="+action, func(b *testing.B) {
			call := &resolve.Call{Name: tool.Name, Arguments: map[string]any{"path": "a.txt", "action": action}}
			want := action == "read"
			b.ReportAllocs()
			for b.Loop() {
				r, err := filetool.Table.Resolve(ctx, call)
				if err != nil || r.Annotations.ReadOnlyHint != want {
					b.Fatalf("%s: %+v, %v", action, r, err)
				}
			}
		})
	}
}

// BenchmarkResolveFunc measures a function resolver that reads the path
// argument to decide public or private, on its own.
func BenchmarkResolveFunc(b *testing.B) {
	ctx := context.Background()
	tool := benchGetFileTool()
	for _, c := range []struct{ name, path string }{{"public", "public/readme.md"}, {"private", "hr/salaries.csv"}} {
		b.Run("path="+c.name, func(b *testing.B) {
			call := &resolve.Call{Name: tool.Name, Arguments: map[string]any{"path": c.path}}
			b.ReportAllocs()
			for b.Loop() {
				r, err := benchFileResolver.Resolve(ctx, call)
				if err != nil || r.Hints.ResultSensitivity == "" {
					b.Fatalf("%+v, %v", r, err)
				}
			}
		})
	}
}

// BenchmarkServerDispatch measures the whole server side of one request
// after JSON-RPC decoding and before encoding, with no transport: the
// request goes straight into the server's receiving method handler, below
// any middleware added after resolve.NewServer (so resolve's own
// middleware, the SDK's, the method dispatch and the handler all run). The
// session is a real one, connected in memory and initialized by
// resolve.NewClient, so the extension shape is negotiated. Under
// 2026-07-28 the request carries its protocol version and capabilities in
// _meta, as decoded from the wire.
//
//   - op=call: tools/call of noop (arguments still raw JSON, as the SDK
//     hands them to the tool handler, which decodes and validates them);
//   - op=call-raw: tools/call of noop_raw (arguments left raw, nothing
//     validated);
//   - op=resolve: tools/resolve of manage_files (table; arguments already
//     decoded, validated against the schema by resolve);
//   - op=resolve-func: tools/resolve of get_file (function resolver; in a
//     legacy session the result is remembered per session, keyed by the
//     JSON encoding of the arguments).
func BenchmarkServerDispatch(b *testing.B) {
	ctx := context.Background()
	s := newBenchServer(b)
	var next mcp.MethodHandler
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		next = h // called once, now: h is everything below this middleware
		return h
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := resolve.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, ct,
		&mcp.ClientSessionOptions{ProtocolVersion: preflight.ProtocolLegacy})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	for _, era := range benchEras {
		var meta mcp.Meta
		if era == preflight.ProtocolStateless {
			// As the SDK decodes it from the wire: plain JSON values.
			meta = mcp.Meta{
				mcp.MetaKeyProtocolVersion:    era,
				mcp.MetaKeyClientInfo:         map[string]any{"name": "bench", "version": "v1"},
				mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{preflight.ExtensionToolResolution: map[string]any{}}},
			}
		}
		resolveReq := func(name string, args map[string]any) mcp.Request {
			p := &preflight.ResolveParams{Name: name, Arguments: args}
			p.Meta = meta
			return resolve.NewResolveRequest(ss, p)
		}
		ops := []struct {
			name   string
			method string
			req    mcp.Request
		}{
			{"call", "tools/call", &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{
				Meta: meta, Name: benchNoop, Arguments: json.RawMessage(`{"path":"a.txt","action":"read"}`)}}},
			{"call-raw", "tools/call", &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{
				Meta: meta, Name: benchNoopRaw, Arguments: json.RawMessage(`{"path":"a.txt","action":"read"}`)}}},
			{"resolve", preflight.MethodResolve, resolveReq(filetool.Name, benchArgs())},
			{"resolve-func", preflight.MethodResolve, resolveReq(benchGetFile, map[string]any{"path": "public/readme.md"})},
		}
		for _, op := range ops {
			b.Run("era="+era+"/op="+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := next(ctx, op.method, op.req)
					if err != nil {
						b.Fatal(err)
					}
					switch r := res.(type) {
					case *mcp.CallToolResult:
						if r.IsError {
							b.Fatalf("call: %+v", r.Content[0])
						}
					case *preflight.ResolveResult:
						if r.SeedShape() {
							b.Fatalf("resolve: seed shape, want the extension's")
						}
					default:
						b.Fatalf("result %T", res)
					}
				}
			})
		}
	}
}

// benchOp is one operation measured on a client session.
type benchOp struct {
	name string
	run  func(ctx context.Context, b *testing.B, cs *mcp.ClientSession)
}

// benchOpSet holds the operations of the round-trip benchmarks.
type benchOpSet struct {
	call, callRaw, resolve, preflight benchOp
}

// benchOps returns the operations of the round-trip benchmarks, each
// checked for the answer it must get; listed is manage_files as listed
// (used by preflight only). The resolve and the calls carry the same
// arguments; the resolve and the typed call validate them against the
// same schema.
func benchOps(listed *mcp.Tool) benchOpSet {
	callTool := func(name string) func(ctx context.Context, b *testing.B, cs *mcp.ClientSession) {
		return func(ctx context.Context, b *testing.B, cs *mcp.ClientSession) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: benchArgs()})
			if err != nil || res.IsError {
				b.Fatalf("call %s: %+v, %v", name, res, err)
			}
		}
	}
	return benchOpSet{
		call:    benchOp{"call", callTool(benchNoop)},
		callRaw: benchOp{"call-raw", callTool(benchNoopRaw)},
		resolve: benchOp{"resolve", func(ctx context.Context, b *testing.B, cs *mcp.ClientSession) {
			res, err := resolve.Resolve(ctx, cs, filetool.Name, benchArgs())
			if err != nil || res.SeedShape() || res.Annotations == nil || !res.Annotations.ReadOnlyHint {
				b.Fatalf("resolve: %+v, %v", res, err)
			}
		}},
		preflight: benchOp{"preflight", func(ctx context.Context, b *testing.B, cs *mcp.ClientSession) {
			d, err := resolve.Preflight(ctx, cs, listed, benchArgs(), nil)
			if err != nil || !d.Resolved || d.NeedsConfirmation() {
				b.Fatalf("preflight: %+v, %v", d, err)
			}
		}},
	}
}

// benchRunOps runs each op as a sub-benchmark of b named
// era=<era>/op=<name>, then op=paired (call against resolve) and
// op=paired-raw (call-raw against resolve).
func benchRunOps(ctx context.Context, b *testing.B, cs *mcp.ClientSession, era string, set benchOpSet, ops ...benchOp) {
	for _, op := range ops {
		b.Run("era="+era+"/op="+op.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				op.run(ctx, b, cs)
			}
		})
	}
	b.Run("era="+era+"/op=paired", func(b *testing.B) {
		benchPaired(ctx, b, cs, set.call, set.resolve)
	})
	b.Run("era="+era+"/op=paired-raw", func(b *testing.B) {
		benchPaired(ctx, b, cs, set.callRaw, set.resolve)
	})
}

// benchConnect connects c to url in the given era over a transport of its
// own, and returns the session and manage_files as listed.
func benchConnect(b *testing.B, c *mcp.Client, url, era string) (*mcp.ClientSession, *mcp.Tool) {
	b.Helper()
	ctx := context.Background()
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		b.Fatalf("negotiated %s, want %s", got, era)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range list.Tools {
		if t.Name == filetool.Name {
			return cs, t
		}
	}
	b.Fatalf("%s not listed", filetool.Name)
	return nil, nil
}

// BenchmarkRoundTrip measures one request over loopback HTTP through
// endpoint.NewHandler (the SDK's default event-stream responses), with the
// SDK client, in both protocol eras: 2026-07-28 (stateless, capabilities
// in every request's _meta) and 2025-11-25 (a session opened by
// initialize). Within an era every operation runs on the same connection:
//
//   - op=call: a no-op tools/call of a typed tool (noop: the SDK decodes
//     and validates its arguments, as for any tool added with mcp.AddTool);
//   - op=call-raw: a no-op tools/call of a raw tool (noop_raw: nothing
//     decoded, nothing validated);
//   - op=resolve: tools/resolve of manage_files (resolve.Resolve), the
//     extension shape;
//   - op=preflight: resolve.Preflight, the resolve plus the client's
//     checks and policy evaluation;
//   - op=paired, op=paired-raw: a call (typed, raw) and a resolve in every
//     iteration, in alternating order, each timed on its own; they report
//     call-ns/op, resolve-ns/op and their ratio resolve/call. Both
//     operations see the same machine at the same moment, so the ratio
//     holds up on a loaded machine, where separate sub-benchmarks may each
//     catch a different load;
//   - op=resolve-seed: tools/resolve from a client that does not declare
//     the extension, answered in the seed shape (the complete tool); this
//     one runs on a connection of its own.
//
// Goal: op=resolve no slower than 1.1x op=call.
func BenchmarkRoundTrip(b *testing.B) {
	s := newBenchServer(b)
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	// Cleanups run last first: the sessions (and the legacy standalone
	// event streams) end before the server closes.
	b.Cleanup(hs.Close)
	ctx := context.Background()
	impl := &mcp.Implementation{Name: "bench", Version: "v1"}
	for _, era := range benchEras {
		cs, listed := benchConnect(b, resolve.NewClient(impl, nil), hs.URL, era)
		if !preflight.IsResolvable(listed) {
			b.Fatalf("%s: manage_files lacks the extension marker", era)
		}
		set := benchOps(listed)
		benchRunOps(ctx, b, cs, era, set, set.call, set.callRaw, set.resolve, set.preflight)
		seedClient := mcp.NewClient(impl, nil)
		if err := resolve.EnableClient(seedClient); err != nil {
			b.Fatal(err)
		}
		seed, _ := benchConnect(b, seedClient, hs.URL, era)
		b.Run("era="+era+"/op=resolve-seed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := resolve.Resolve(ctx, seed, filetool.Name, benchArgs())
				if err != nil || !res.SeedShape() {
					b.Fatalf("resolve: %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkInMemory is BenchmarkRoundTrip's op=call, op=call-raw,
// op=resolve and the paired ratios over the SDK's in-memory transport (a
// net.Pipe, newline-delimited JSON, as stdio): JSON-RPC encoding and
// decoding on both sides, no HTTP. Under 2026-07-28 the SDK keeps one
// connection and sends _meta per request.
func BenchmarkInMemory(b *testing.B) {
	ctx := context.Background()
	impl := &mcp.Implementation{Name: "bench", Version: "v1"}
	for _, era := range benchEras {
		s := newBenchServer(b)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := resolve.NewClient(impl, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			b.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != era {
			b.Fatalf("negotiated %s, want %s", got, era)
		}
		set := benchOps(nil)
		benchRunOps(ctx, b, cs, era, set, set.call, set.callRaw, set.resolve)
		cs.Close()
		ss.Wait()
	}
}

// benchPaired runs call and resolve once each per iteration, alternating
// which goes first, and reports the time of each and their ratio.
func benchPaired(ctx context.Context, b *testing.B, cs *mcp.ClientSession, call, res benchOp) {
	var tCall, tRes time.Duration
	n := 0
	for b.Loop() {
		first, second, dFirst, dSecond := call, res, &tCall, &tRes
		if n%2 == 1 {
			first, second, dFirst, dSecond = res, call, &tRes, &tCall
		}
		t0 := time.Now()
		first.run(ctx, b, cs)
		t1 := time.Now()
		second.run(ctx, b, cs)
		*dFirst += t1.Sub(t0)
		*dSecond += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(tCall.Nanoseconds())/float64(n), "call-ns/op")
	b.ReportMetric(float64(tRes.Nanoseconds())/float64(n), "resolve-ns/op")
	b.ReportMetric(float64(tRes)/float64(tCall), "resolve/call")
}
