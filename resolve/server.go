package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// ServerOptions configure a [Server]. The zero value is ready to use.
type ServerOptions struct {
	// Logger receives resolver failures, panics and refused resolutions.
	// Nil discards them.
	Logger *slog.Logger
	// Overrides are a deployer's policy hints by tool name. They win over
	// the server's hints in tools/list and in every resolution. Nil means
	// none.
	Overrides map[string]hints.Hints
	// SessionCacheSize bounds, per legacy session, the number of function
	// resolutions remembered so that identical (name, arguments) get
	// identical results within the session, as the seed requires. Once it
	// is full, further resolutions are computed but not remembered. Zero
	// means 1024. Resolutions are remembered per tool as added: adding a
	// tool again or removing it forgets them. Tables are pure and need no
	// cache; under 2026-07-28 there are no sessions and nothing is
	// remembered.
	SessionCacheSize int
}

// Server serves tools/resolve for the tools added through it.
type Server struct {
	server    *mcp.Server
	logger    *slog.Logger
	overrides map[string]hints.Hints
	cacheSize int

	mu    sync.RWMutex
	tools map[string]*entry

	cacheMu sync.Mutex
	caches  map[*mcp.ServerSession]*sessionCache
}

// entry is one resolvable tool.
type entry struct {
	tool        *mcp.Tool // as listed in tools/list
	resolver    Resolver
	pure        bool
	static      preflight.Annotations
	staticHints hints.Hints
	schema      *jsonschema.Resolved
	// retired is set, under Server.cacheMu, once the tool is added again
	// or removed: its resolutions are then never remembered.
	retired bool
}

// declaration is e's static declaration, the bound of its resolutions.
func (e *entry) declaration() hints.Declaration {
	return hints.Declaration{Annotations: e.static, Hints: e.staticHints}
}

// NewServer installs tool resolution on s: the tools/resolve method, the
// capability in initialize and server/discover, and the per-tool markers in
// tools/list. Add resolvable tools with [AddTool] or [Server.AddTool].
func NewServer(s *mcp.Server, opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	rs := &Server{
		server:    s,
		logger:    opts.Logger,
		overrides: opts.Overrides,
		cacheSize: opts.SessionCacheSize,
		tools:     make(map[string]*entry),
		caches:    make(map[*mcp.ServerSession]*sessionCache),
	}
	if rs.logger == nil {
		rs.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if rs.cacheSize <= 0 {
		rs.cacheSize = 1024
	}
	if err := mcp.AddReceivingCustomMethod(s, preflight.MethodResolve, rs.handle); err != nil {
		panic(err) // only if the SDK ever makes tools/resolve a standard method
	}
	s.AddReceivingMiddleware(rs.middleware)
	return rs
}

// AddTool adds a typed tool to the server, as [mcp.AddTool] does, and makes
// it resolvable with r. If r is a [*Table], the tool's annotations and
// policy hints are derived from the table's worst case (only the title is
// kept from t). Otherwise t's annotations and hints are the static
// declaration that every resolution must stay within.
//
// When t has no input schema it is inferred from In, as [mcp.AddTool]
// does; if r is a [*Table] without a Default, the table's argument then
// takes the rows' values as its enum, so that a value without a row is
// refused (-32602) rather than resolved.
//
// AddTool panics on misuse, as [mcp.AddTool] does: a table that does not
// fit the input schema, invalid hints in t's _meta.
func AddTool[In, Out any](rs *Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out], r Resolver) {
	tt := *t
	if tt.InputSchema == nil {
		rt := reflect.TypeFor[In]()
		if rt == reflect.TypeFor[any]() {
			tt.InputSchema = &jsonschema.Schema{Type: "object"}
		} else {
			if rt.Kind() == reflect.Pointer {
				rt = rt.Elem()
			}
			s, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
			if err != nil {
				panic(fmt.Errorf("resolve.AddTool %q: input schema: %w", t.Name, err))
			}
			if tbl, ok := r.(*Table); ok && tbl.Default == nil {
				if p := s.Properties[tbl.Argument]; p != nil && len(p.Enum) == 0 {
					typ := p.Type
					if typ == "" && slices.Contains(p.Types, "string") {
						typ = "string"
					}
					p.Enum = tbl.enum(typ)
				}
			}
			tt.InputSchema = s
		}
	}
	e := rs.prepare(&tt, r)
	mcp.AddTool(rs.server, e.tool, h)
	rs.store(e)
}

// AddTool adds a tool with a raw handler, as [mcp.Server.AddTool] does (the
// input schema must be set), and makes it resolvable with r. See the
// generic [AddTool] for how annotations are treated.
func (rs *Server) AddTool(t *mcp.Tool, h mcp.ToolHandler, r Resolver) {
	tt := *t
	e := rs.prepare(&tt, r)
	rs.server.AddTool(e.tool, h)
	rs.store(e)
}

// RemoveTools removes tools from the server and from resolution, and
// forgets their remembered resolutions.
func (rs *Server) RemoveTools(names ...string) {
	rs.server.RemoveTools(names...)
	var gone []*entry
	rs.mu.Lock()
	for _, n := range names {
		if e, ok := rs.tools[n]; ok {
			gone = append(gone, e)
			delete(rs.tools, n)
		}
	}
	rs.mu.Unlock()
	rs.forget(gone...)
}

// store makes e the resolvable tool of its name, forgetting the
// resolutions of the tool it replaces.
func (rs *Server) store(e *entry) {
	rs.mu.Lock()
	old := rs.tools[e.tool.Name]
	rs.tools[e.tool.Name] = e
	rs.mu.Unlock()
	if old != nil {
		rs.forget(old)
	}
}

// prepare checks t and r and returns the entry, with t completed as it
// will be listed.
func (rs *Server) prepare(t *mcp.Tool, r Resolver) *entry {
	fail := func(format string, args ...any) {
		panic(fmt.Errorf("resolve.AddTool %q: %s", t.Name, fmt.Sprintf(format, args...)))
	}
	if r == nil {
		fail("nil Resolver")
	}
	if t.InputSchema == nil {
		fail("missing input schema")
	}
	var schemaMap map[string]any
	var schema *jsonschema.Schema
	if err := remarshal(t.InputSchema, &schemaMap); err != nil {
		fail("input schema: %v", err)
	}
	if err := remarshal(t.InputSchema, &schema); err != nil || schema == nil {
		fail("input schema: %v", err)
	}
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		fail("input schema: %v", err)
	}
	t.Meta = maps.Clone(t.Meta)
	e := &entry{tool: t, resolver: r, schema: resolved}
	if tbl, ok := r.(*Table); ok {
		if err := tbl.check(schemaMap); err != nil {
			fail("%v", err)
		}
		static := tbl.Static()
		title := ""
		if t.Annotations != nil {
			title = t.Annotations.Title
		}
		t.Annotations = static.Annotations.ToolAnnotations(title)
		t.Meta = static.Hints.Write(t.Meta)
		e.pure = true
	}
	e.static = preflight.AnnotationsOf(t.Annotations)
	if e.staticHints, err = hints.Read(t.Meta); err != nil {
		fail("policy hints: %v", err)
	}
	if len(t.Meta) == 0 {
		t.Meta = nil
	}
	return e
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// Bounds on what error messages repeat of a request.
const (
	maxEchoName   = 128 // a tool name, as tool names go
	maxEchoSchema = 400 // a validation error: the field and part of the value
)

// Errors sent to clients.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: preflight.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: preflight.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

// negotiation is what a request declared about the extension.
type negotiation int

const (
	negotiatedNone negotiation = iota
	negotiatedExtension
	negotiatedUnsupported // declared with settings this revision does not know
)

func negotiatedBy(caps *mcp.ClientCapabilities) negotiation {
	if caps == nil {
		return negotiatedNone
	}
	v, ok := caps.Extensions[preflight.ExtensionToolResolution]
	if !ok {
		return negotiatedNone
	}
	if m, isMap := v.(map[string]any); isMap && len(m) == 0 || v == nil {
		return negotiatedExtension
	}
	return negotiatedUnsupported
}

// declared reports whether caps declare the extension id with the empty
// settings of this revision. Settings this server does not know mean the
// client expects something else: the extension's metadata is not sent.
func declared(caps *mcp.ClientCapabilities, id string) bool {
	if caps == nil {
		return false
	}
	v, ok := caps.Extensions[id]
	if !ok {
		return false
	}
	m, isMap := v.(map[string]any)
	return v == nil || isMap && len(m) == 0
}

func (rs *Server) handle(ctx context.Context, ss *mcp.ServerSession, p *resolveParams) (*preflight.ResolveResult, error) {
	if p == nil {
		// Null or missing params (legacy sessions let them through).
		// Checked first: the SDK's request accessors cannot take nil
		// params of a type that embeds ParamsBase.
		return nil, invalidParams(`tools/resolve: missing params: send {"name": TOOL, "arguments": {...}}`)
	}
	if p.problem != "" {
		return nil, invalidParams("tools/resolve: %s", p.problem)
	}
	extra, _ := ctx.Value(extraKey{}).(*mcp.RequestExtra)
	req := &mcp.ServerRequest[*resolveParams]{Session: ss, Params: p, Extra: extra}
	caps := req.ClientCapabilities()
	neg := negotiatedBy(caps)
	if neg == negotiatedUnsupported {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
			"extensions": map[string]any{preflight.ExtensionToolResolution: map[string]any{}},
		}})
		return nil, &jsonrpc.Error{
			Code:    preflight.CodeMissingCapability,
			Message: fmt.Sprintf("unsupported settings for extension %s: this server implements the revision whose settings are {}", preflight.ExtensionToolResolution),
			Data:    data,
		}
	}
	stateless := req.ProtocolVersion() >= preflight.ProtocolStateless
	if p.Name == "" {
		return nil, invalidParams(`tools/resolve: missing "name": give the name of a tool from tools/list`)
	}
	rs.mu.RLock()
	e, ok := rs.tools[p.Name]
	rs.mu.RUnlock()
	if !ok {
		return nil, invalidParams("tools/resolve: tool %q is unknown or not resolvable on this server; resolve only tools marked resolvable in tools/list", clip(p.Name, maxEchoName))
	}
	if p.Arguments == nil {
		return nil, invalidParams(`tools/resolve: missing "arguments" for tool %q: send the complete arguments of the intended call ({} for none)`, p.Name)
	}
	if err := e.schema.Validate(p.Arguments); err != nil {
		// The validator quotes the offending value: keep the field, cut the value.
		return nil, invalidParams("tools/resolve: invalid arguments for tool %q: %s", p.Name, clip(strings.TrimPrefix(err.Error(), "validating root: "), maxEchoSchema))
	}

	call := &Call{Name: p.Name, Arguments: p.Arguments}
	if !e.pure { // a table looks at the arguments only
		call.Caller = caller(req, caps, stateless)
	}
	res, err := rs.resolution(ctx, ss, e, call, stateless)
	if err != nil {
		return nil, err
	}
	if neg == negotiatedExtension {
		return extensionResult(p.Name, res, req.ClientCapabilities()), nil
	}
	return seedResult(e.tool, res, stateless), nil
}

// caller is the view of req's client that a resolver gets.
func caller(req *mcp.ServerRequest[*resolveParams], caps *mcp.ClientCapabilities, stateless bool) Caller {
	c := Caller{
		ProtocolVersion: req.ProtocolVersion(),
		Capabilities:    caps,
	}
	if !stateless && req.Session != nil {
		c.SessionID = req.Session.ID()
	}
	if req.Extra != nil {
		c.TokenInfo = req.Extra.TokenInfo
	}
	return c
}

// resolution computes (or, within a legacy session, recalls) the checked
// resolution of one call, with overrides applied.
func (rs *Server) resolution(ctx context.Context, ss *mcp.ServerSession, e *entry, call *Call, stateless bool) (*Resolution, error) {
	useCache := !e.pure && !stateless && ss != nil
	var key string
	var r Resolution
	hit := false
	if useCache {
		b, _ := json.Marshal(call.Arguments) // map keys are sorted: canonical
		key = string(b)
		r, hit = rs.cached(ss, e, key)
	}
	if !hit {
		var err error
		r, err = runResolver(ctx, e.resolver, call)
		if err != nil {
			rs.logger.ErrorContext(ctx, "tools/resolve: resolver failed", "tool", call.Name, "error", err)
			return nil, internalError("tools/resolve: could not resolve tool %q for these arguments; use its static annotations from tools/list", call.Name)
		}
		if err := r.check(); err != nil {
			rs.logger.ErrorContext(ctx, "tools/resolve: resolver returned unusable hints", "tool", call.Name, "error", err)
			return nil, internalError("tools/resolve: could not resolve tool %q for these arguments; use its static annotations from tools/list", call.Name)
		}
	}
	// Every answer, remembered or fresh, is held to the static declaration
	// of the tool as it is now.
	if over := hints.Exceeds(e.declaration(), hints.Declaration{Annotations: r.Annotations, Hints: r.Hints}); len(over) > 0 {
		text := excessText(over)
		rs.logger.ErrorContext(ctx, "tools/resolve: resolution exceeds the static declaration; not sent",
			"tool", call.Name, "exceeds", text, "cached", hit)
		return nil, internalError("tools/resolve: the resolution of tool %q is riskier than its static declaration in %s and was withheld; use the static annotations from tools/list",
			call.Name, text)
	}
	if useCache && !hit {
		rs.remember(ss, e, key, r)
	}
	if over, ok := rs.overrides[call.Name]; ok {
		r.Hints = hints.Merge(r.Hints, over)
	}
	return &r, nil
}

// excessText lists the ways a resolution exceeds its bounds, for messages.
func excessText(over []hints.Excess) string {
	parts := make([]string, len(over))
	for i, x := range over {
		parts[i] = x.String()
	}
	return strings.Join(parts, ", ")
}

// runResolver calls r, turning a panic into an error.
func runResolver(ctx context.Context, r Resolver, c *Call) (res Resolution, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = Resolution{}, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.Resolve(ctx, c)
}

// sessionCache is one legacy session's remembered function resolutions,
// by tool entry and canonical arguments.
type sessionCache struct {
	n       int // resolutions held, bounded by Server.cacheSize
	byEntry map[*entry]map[string]Resolution
}

func (rs *Server) cached(ss *mcp.ServerSession, e *entry, key string) (Resolution, bool) {
	rs.cacheMu.Lock()
	defer rs.cacheMu.Unlock()
	c := rs.caches[ss]
	if c == nil {
		return Resolution{}, false
	}
	r, ok := c.byEntry[e][key]
	return r, ok
}

func (rs *Server) remember(ss *mcp.ServerSession, e *entry, key string, r Resolution) {
	rs.cacheMu.Lock()
	defer rs.cacheMu.Unlock()
	if e.retired {
		return // the tool was added again or removed meanwhile
	}
	c, ok := rs.caches[ss]
	if !ok {
		c = &sessionCache{byEntry: make(map[*entry]map[string]Resolution)}
		rs.caches[ss] = c
		// Forget the session's resolutions when it ends.
		go func() {
			_ = ss.Wait()
			rs.cacheMu.Lock()
			delete(rs.caches, ss)
			rs.cacheMu.Unlock()
		}()
	}
	if c.n >= rs.cacheSize {
		return
	}
	m := c.byEntry[e]
	if m == nil {
		m = make(map[string]Resolution)
		c.byEntry[e] = m
	}
	if _, dup := m[key]; !dup {
		m[key] = r
		c.n++
	}
}

// forget drops every remembered resolution of the entries, in every
// session, and keeps resolutions still being computed for them from being
// remembered.
func (rs *Server) forget(entries ...*entry) {
	if len(entries) == 0 {
		return
	}
	rs.cacheMu.Lock()
	defer rs.cacheMu.Unlock()
	for _, e := range entries {
		e.retired = true
		for _, c := range rs.caches {
			c.n -= len(c.byEntry[e])
			delete(c.byEntry, e)
		}
	}
}

// extensionResult is the extension shape's answer. Its _meta holds only
// objects owned by extensions the request declared, as the extension
// requires: the policy hints under [preflight.MetaPolicyHints], security
// schemes under [preflight.MetaSecuritySchemes], and the entries of
// r.Meta whose key was declared and whose value is an object.
func extensionResult(name string, r *Resolution, caps *mcp.ClientCapabilities) *preflight.ResolveResult {
	a := r.Annotations
	res := &preflight.ResolveResult{ResultType: preflight.ResultTypeComplete, Name: name, Annotations: &a}
	meta := map[string]any{}
	for k, v := range r.Meta {
		if declared(caps, k) && isObject(v) {
			meta[k] = v
		}
	}
	if obj := r.Hints.Object(); obj != nil && declared(caps, preflight.MetaPolicyHints) {
		meta[preflight.MetaPolicyHints] = obj
	}
	if len(r.SecuritySchemes) > 0 && declared(caps, preflight.MetaSecuritySchemes) {
		meta[preflight.MetaSecuritySchemes] = map[string]any{"securitySchemes": r.SecuritySchemes}
	}
	if len(meta) > 0 {
		res.Meta = meta
	}
	return res
}

// isObject reports whether v encodes as a JSON object.
func isObject(v any) bool {
	b, err := json.Marshal(v)
	return err == nil && len(b) > 0 && b[0] == '{'
}

// seedResult is the seed shape's answer: the listed tool with the
// resolution's annotations, and in its _meta the listed entries other
// than the static policy hints (the worst case of every call, which say
// nothing about this one), then r.Meta, then the resolution's hints.
func seedResult(listed *mcp.Tool, r *Resolution, stateless bool) *preflight.ResolveResult {
	t := *listed
	title := ""
	if listed.Annotations != nil {
		title = listed.Annotations.Title
	}
	t.Annotations = r.Annotations.ToolAnnotations(title)
	meta := hints.Without(listed.Meta)
	if len(r.Meta) > 0 {
		if meta == nil {
			meta = make(map[string]any, len(r.Meta)+4)
		}
		maps.Copy(meta, r.Meta)
	}
	if !r.Hints.IsZero() {
		meta = r.Hints.Write(meta)
	}
	t.Meta = meta
	res := &preflight.ResolveResult{Tool: &preflight.Tool{Tool: &t, Resolve: true, SecuritySchemes: r.SecuritySchemes}}
	if stateless {
		res.ResultType = preflight.ResultTypeComplete
	}
	return res
}

// extraKey carries a tools/resolve request's [mcp.RequestExtra] (the
// bearer token's information) from the middleware, which sees it, to the
// method handler, which the SDK does not hand it.
type extraKey struct{}

// middleware adds the markers and the capability to tools/list,
// initialize and server/discover results, and hands tools/resolve its
// request's extra information.
func (rs *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == preflight.MethodResolve {
			if extra := req.GetExtra(); extra != nil {
				ctx = context.WithValue(ctx, extraKey{}, extra)
			}
		}
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			var caps *mcp.ClientCapabilities
			if cr, ok := req.(interface {
				ClientCapabilities() *mcp.ClientCapabilities
			}); ok {
				caps = cr.ClientCapabilities()
			}
			return rs.listResult(r, negotiatedBy(caps) == negotiatedExtension), nil
		case *mcp.InitializeResult:
			return &initializeResult{InitializeResult: r, Capabilities: rs.capabilities(r.Capabilities)}, nil
		case *mcp.DiscoverResult:
			return &discoverResult{DiscoverResult: r, Capabilities: rs.capabilities(r.Capabilities)}, nil
		}
		return res, nil
	}
}

// listToolsResult is a tools/list result whose tools carry the seed's
// top-level resolve field, for requests that did not declare the
// extension (its schema admits no extra field on a tool).
type listToolsResult struct {
	*mcp.ListToolsResult
	Tools []*preflight.Tool `json:"tools"`
}

func (rs *Server) listResult(r *mcp.ListToolsResult, extension bool) mcp.Result {
	out := &listToolsResult{ListToolsResult: r, Tools: make([]*preflight.Tool, len(r.Tools))}
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	for i, t := range r.Tools {
		_, resolvable := rs.tools[t.Name]
		over, overridden := rs.overrides[t.Name]
		if !resolvable && !overridden {
			out.Tools[i] = &preflight.Tool{Tool: t}
			continue
		}
		tt := *t // never mutate the server's tool
		if overridden {
			tt.Meta = over.Write(tt.Meta)
		}
		if resolvable && extension {
			tt.Meta = maps.Clone(tt.Meta)
			if tt.Meta == nil {
				tt.Meta = make(map[string]any, 1)
			}
			tt.Meta[preflight.ExtensionToolResolution] = preflight.ResolvableMarker()
		}
		out.Tools[i] = &preflight.Tool{Tool: &tt, Resolve: resolvable && !extension}
	}
	return out
}

type initializeResult struct {
	*mcp.InitializeResult
	Capabilities *serverCapabilities `json:"capabilities"`
}

type discoverResult struct {
	*mcp.DiscoverResult
	Capabilities *serverCapabilities `json:"capabilities"`
}

// serverCapabilities adds the seed's capabilities.tools.resolve.
type serverCapabilities struct {
	*mcp.ServerCapabilities
	Tools *toolCapabilities `json:"tools,omitempty"`
}

type toolCapabilities struct {
	*mcp.ToolCapabilities
	Resolve bool `json:"resolve"`
}

func (rs *Server) capabilities(c *mcp.ServerCapabilities) *serverCapabilities {
	var cc mcp.ServerCapabilities
	if c != nil {
		cc = *c
	}
	cc.Extensions = maps.Clone(cc.Extensions)
	cc.AddExtension(preflight.ExtensionToolResolution, nil)
	cc.AddExtension(preflight.MetaPolicyHints, nil)
	cc.AddExtension(preflight.MetaSecuritySchemes, nil)
	tools := cc.Tools
	if tools == nil {
		tools = &mcp.ToolCapabilities{}
	}
	return &serverCapabilities{ServerCapabilities: &cc, Tools: &toolCapabilities{ToolCapabilities: tools, Resolve: true}}
}

// errCode returns the JSON-RPC code of err, if it is a JSON-RPC error.
func errCode(err error) (int64, bool) {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code, true
	}
	return 0, false
}
