package disclose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// _meta keys this package writes.
const (
	// MetaToolVersions is the key, in the _meta of a tool_descriptions
	// read's contents, of an object mapping each returned tool to the
	// version of its full definition. A client that caches descriptions
	// keeps the version and fetches again when it differs.
	MetaToolVersions = "io.github.preflightmcp/toolVersions"
	// MetaVersion is the key, in the _meta of the tool_descriptions
	// resource in resources/list, of the version of all full definitions
	// together: it changes whenever any of them does.
	MetaVersion = "io.github.preflightmcp/descriptionsVersion"
)

// Defaults of [Options].
const (
	DefaultTTL        = 24 * time.Hour
	DefaultFetchRate  = rate.Limit(10) // reads per second per scope
	DefaultFetchBurst = 30
)

// Options configure a [Server]. A nil *Options means the zero value, which
// is ready to use: the seed's URI, open schemas, the in-memory store,
// [DefaultKey] with a shared anonymous scope, and the default rate limit.
type Options struct {
	// URI is the tool_descriptions resource's URI. Empty means
	// [DefaultURI].
	URI string
	// Schema is how far tools/list simplifies input schemas. The zero
	// value is [SchemaObject].
	Schema SchemaLevel
	// Store holds authorization state. Nil means a new [MemoryStore]
	// (state in this process only); use a shared store
	// ([github.com/preflightmcp/preflight/gateway/internal/redisstore]) when
	// several replicas serve the same clients.
	Store Store
	// TTL is how long a scope's authorization lasts after its last fetch.
	// Zero means [DefaultTTL]. State tied to a session or connection is
	// also forgotten when it ends.
	TTL time.Duration
	// Key returns a request's scope key. Nil means [DefaultKey].
	Key KeyFunc
	// Anonymous says what requests without a scope key get. The zero
	// value is [AnonymousShared].
	Anonymous AnonymousPolicy
	// Source gives the authors' details of tools (examples, usage and
	// error guidance), such as a [Dir]. Details given with
	// [Server.SetDetails] or [AddTool] win over it. Nil means none.
	Source Source
	// FetchRate limits tool_descriptions reads per scope, in reads per
	// second, with FetchBurst reads at once. Zero means
	// [DefaultFetchRate]; [rate.Inf] disables the limit. Limiters live
	// in each process: with N replicas a scope may read up to N times
	// the rate. Each process keeps the limiters of at most 10,000 scopes,
	// dropping idle ones first and then the least recently used, so a
	// flood of new scopes never turns the limit off.
	FetchRate rate.Limit
	// FetchBurst is the burst of FetchRate. Zero means
	// [DefaultFetchBurst].
	FetchBurst int
	// MaxToolsPerRead bounds the distinct tool names one read may
	// select. Zero means [DefaultMaxToolsPerRead]; negative means no
	// bound.
	MaxToolsPerRead int
	// OmitInstructions leaves the server's instructions as they are
	// instead of appending [Instructions].
	OmitInstructions bool
	// Logger receives store failures and refused calls at debug level.
	// Nil discards them.
	Logger *slog.Logger
}

// Server serves progressive disclosure of tool descriptions for an
// [mcp.Server]: minimal tools/list entries, the tool_descriptions resource
// and the authorization check on tools/call, for every tool of the
// server, however it was added.
type Server struct {
	server    *mcp.Server
	uri       string
	level     SchemaLevel
	store     Store
	ttl       time.Duration
	key       KeyFunc
	anonymous AnonymousPolicy
	source    Source
	maxTools  int
	instr     string
	logger    *slog.Logger
	rate      rate.Limit
	burst     int

	detailsMu sync.RWMutex
	details   map[string]*Details // given in code

	cacheMu sync.RWMutex
	byName  map[string]*entry // full definitions, last seen

	limiters *limiterCache

	watchMu sync.Mutex
	watched map[*mcp.ServerSession]bool
}

// entry is one tool's full definition, computed once per (tool, details).
type entry struct {
	tool    *mcp.Tool
	details *Details
	json    []byte // Full(tool, details), marshalled
	version string
}

// New installs progressive disclosure on server and returns it: a
// receiving middleware that lists tools minimally, serves and authorizes
// the tool_descriptions resource, refuses calls made before their tool's
// description was fetched, and appends [Instructions] to the server's
// instructions; and the resource itself (with a URI template advertising
// its query). Tools are added to server as usual (mcp.AddTool,
// resolve.AddTool, inject.AddTool) or through [AddTool] and
// [Server.AddTool] to give their details at once.
//
// Middleware added to server later runs before this one (the SDK wraps
// outward), so a middleware that filters tools/list by authorization
// should be added before New: the descriptions and the call check then see
// the same tools as the listing. Tool resolution works in either order.
func New(server *mcp.Server, opts *Options) *Server {
	if server == nil {
		panic("disclose.New: nil server")
	}
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		server:    server,
		uri:       opts.URI,
		level:     opts.Schema,
		store:     opts.Store,
		ttl:       opts.TTL,
		key:       opts.Key,
		anonymous: opts.Anonymous,
		source:    opts.Source,
		maxTools:  opts.MaxToolsPerRead,
		logger:    opts.Logger,
		rate:      opts.FetchRate,
		burst:     opts.FetchBurst,
		details:   map[string]*Details{},
		byName:    map[string]*entry{},
		watched:   map[*mcp.ServerSession]bool{},
	}
	if s.uri == "" {
		s.uri = DefaultURI
	}
	if s.store == nil {
		s.store = NewMemoryStore(nil)
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.maxTools == 0 {
		s.maxTools = DefaultMaxToolsPerRead
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.rate == 0 {
		s.rate = DefaultFetchRate
	}
	if s.burst <= 0 {
		s.burst = DefaultFetchBurst
	}
	s.limiters = newLimiterCache(s.rate, s.burst, maxLimiters)
	if !opts.OmitInstructions {
		s.instr = Instructions(s.uri)
	}
	server.AddResource(&mcp.Resource{
		URI:         s.uri,
		Name:        ResourceName,
		Title:       "Tool descriptions",
		Description: ResourceDescription(s.uri),
		MIMEType:    "application/json",
	}, s.readBare)
	server.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: s.uri + "{?tools}",
		Name:        "tool_descriptions",
		Title:       "Tool descriptions, selected",
		Description: "Full definitions of the named tools (comma-separated, exactly as in tools/list). " + ResourceDescription(s.uri),
		MIMEType:    "application/json",
	}, s.readBare)
	server.AddReceivingMiddleware(s.middleware)
	return s
}

// URI returns the tool_descriptions resource's URI.
func (s *Server) URI() string { return s.uri }

// SelectionURI returns the URI that reads the named tools' descriptions.
func (s *Server) SelectionURI(tools ...string) string { return SelectionURI(s.uri, tools...) }

// AddTool adds a tool with a raw handler to the server, as
// [mcp.Server.AddTool] does, and gives its details (nil for none).
func (s *Server) AddTool(t *mcp.Tool, h mcp.ToolHandler, d *Details) {
	s.server.AddTool(t, h)
	s.SetDetails(t.Name, d)
}

// AddTool adds a typed tool to the server, as [mcp.AddTool] does, and gives
// its details (nil for none).
func AddTool[In, Out any](s *Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out], d *Details) {
	mcp.AddTool(s.server, t, h)
	s.SetDetails(t.Name, d)
}

// SetDetails sets (nil: removes) the details of the named tool given in
// code; they win over [Options.Source]. A tool whose details change must
// be fetched again before its next call. SetDetails panics if d names
// another tool or its input schema is not a JSON object.
func (s *Server) SetDetails(name string, d *Details) {
	if d != nil {
		b, err := json.Marshal(d)
		if err == nil {
			_, err = DecodeDetails(name, b)
		}
		if err != nil {
			panic(fmt.Errorf("disclose.SetDetails %q: %w", name, err))
		}
		dd := *d
		d = &dd
	}
	s.detailsMu.Lock()
	if d == nil {
		delete(s.details, name)
	} else {
		s.details[name] = d
	}
	s.detailsMu.Unlock()
}

func (s *Server) detailsFor(name string) *Details {
	s.detailsMu.RLock()
	d, ok := s.details[name]
	s.detailsMu.RUnlock()
	if ok {
		return d
	}
	if s.source != nil {
		return s.source.Details(name)
	}
	return nil
}

// entryFor returns the full definition of t, computing it unless the
// cached one is for the same tool and details.
func (s *Server) entryFor(t *mcp.Tool) *entry {
	d := s.detailsFor(t.Name)
	s.cacheMu.RLock()
	e := s.byName[t.Name]
	s.cacheMu.RUnlock()
	if e != nil && e.tool == t && e.details == d {
		return e
	}
	b, err := json.Marshal(Full(t, d))
	if err != nil { // a schema that does not marshal; the SDK would fail too
		b, _ = json.Marshal(map[string]any{"name": t.Name, "description": t.Description})
	}
	sum := sha256.Sum256(b)
	e = &entry{tool: t, details: d, json: b, version: hex.EncodeToString(sum[:8])}
	s.cacheMu.Lock()
	s.byName[t.Name] = e
	s.cacheMu.Unlock()
	return e
}

// cached returns the last full definition seen of the named tool, current
// with its details, or nil.
func (s *Server) cached(name string) *entry {
	s.cacheMu.RLock()
	e := s.byName[name]
	s.cacheMu.RUnlock()
	if e == nil {
		return nil
	}
	if e.details != s.detailsFor(name) {
		return s.entryFor(e.tool)
	}
	return e
}

// scopeOf returns the scope of req; ok false means the request has no
// identity and the anonymous policy applies.
func (s *Server) scopeOf(ctx context.Context, req mcp.Request) (scope, bool) {
	if s.key != nil {
		k, ok := s.key(ctx, req)
		return scope{key: k}, ok && k != ""
	}
	return defaultScope(req)
}

// watch forgets a session's or connection's state when it ends.
func (s *Server) watch(sc scope) {
	if sc.session == nil {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watched[sc.session] {
		return
	}
	s.watched[sc.session] = true
	go func() {
		_ = sc.session.Wait()
		if err := s.store.Forget(context.Background(), sc.key); err != nil {
			s.logger.Error("disclose: forgetting an ended session's authorization", "scope", sc.key, "error", err)
		}
		s.watchMu.Lock()
		delete(s.watched, sc.session)
		s.watchMu.Unlock()
	}()
}

func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				if res, err, done := s.check(ctx, r, next); done {
					return res, err
				}
			}
			return next(ctx, method, req)
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
				if res, err, done := s.read(ctx, r, next); done {
					return res, err
				}
			}
			return next(ctx, method, req)
		}
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch method {
		case "tools/list":
			return s.minimalList(res), nil
		case "resources/list":
			return s.versionedResources(ctx, req, res, next), nil
		case "initialize":
			if r := embedded[mcp.InitializeResult](res); r != nil && s.instr != "" {
				r.Instructions = joinInstructions(r.Instructions, s.instr)
			}
		case "server/discover":
			if r := embedded[mcp.DiscoverResult](res); r != nil && s.instr != "" {
				r.Instructions = joinInstructions(r.Instructions, s.instr)
			}
		}
		return res, nil
	}
}

func joinInstructions(have, add string) string {
	if have == "" {
		return add
	}
	return have + "\n\n" + add
}

// check runs the authorization check of a tools/call. done false passes
// the call on.
func (s *Server) check(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error, bool) {
	name := req.Params.Name
	sc, ok := s.scopeOf(ctx, req)
	if !ok {
		if s.anonymous == AnonymousOpen {
			return nil, nil, false
		}
		sc = scope{key: KeyAnonymous}
	}
	version, granted, err := s.store.Lookup(ctx, sc.key, name)
	if err != nil {
		s.logger.Error("disclose: authorization store lookup failed", "tool", name, "error", err)
		return nil, (&Error{Code: CodeUnavailable, Message: "The tool authorization state is unavailable; retry later.", Tool: name}).rpcError(RPCInternalError), true
	}
	if granted {
		if e := s.cached(name); e != nil && e.version == version {
			return nil, nil, false
		}
	}
	// Not granted, or granted for a version this process has not seen or
	// that changed: look at the tools as this request sees them.
	e := s.current(ctx, req, name, next)
	if e == nil {
		return nil, nil, false // not a tool of this server: the SDK answers
	}
	if granted && e.version == version {
		return nil, nil, false
	}
	s.logger.DebugContext(ctx, "disclose: call refused: description not fetched", "tool", name, "scope", sc.key, "changed", granted)
	res := descriptionRequired(s.uri, name, granted).toolResult()
	if multiRoundTrip(req.Session) {
		res = completeCall(res)
	}
	return res, nil, true
}

// current returns the named tool's full definition from a fresh listing
// as req sees it, nil if there is no such tool.
func (s *Server) current(ctx context.Context, req mcp.Request, name string, next mcp.MethodHandler) *entry {
	tools, err := s.listTools(ctx, req, next)
	if err != nil {
		s.logger.Error("disclose: listing tools", "error", err)
		return nil
	}
	for _, t := range tools {
		if t.Name == name {
			return s.entryFor(t)
		}
	}
	return nil
}

// listTools lists every tool as req's client would see it, through the
// handlers below this middleware, page by page.
func (s *Server) listTools(ctx context.Context, req mcp.Request, next mcp.MethodHandler) ([]*mcp.Tool, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var all []*mcp.Tool
	cursor := ""
	for range 10000 {
		res, err := next(ctx, "tools/list", &mcp.ListToolsRequest{Session: ss, Extra: req.GetExtra(), Params: &mcp.ListToolsParams{Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		lr := embedded[mcp.ListToolsResult](res)
		if lr == nil {
			return nil, fmt.Errorf("tools/list returned %T", res)
		}
		all = append(all, lr.Tools...)
		if lr.NextCursor == "" {
			return all, nil
		}
		cursor = lr.NextCursor
	}
	return nil, fmt.Errorf("tools/list: too many pages")
}

// readBare serves a read of the resource that reached the SDK: the
// middleware answers every read of the resource's URIs, so only a read
// made around it lands here.
func (s *Server) readBare(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, missingSelection(s.uri).rpcError(RPCInvalidParams)
}

// read serves a read of the tool_descriptions resource. done false passes
// a read of another resource on.
func (s *Server) read(ctx context.Context, req *mcp.ReadResourceRequest, next mcp.MethodHandler) (mcp.Result, error, bool) {
	uri := req.Params.URI
	tools, ours, perr := ParseSelection(s.uri, uri, s.maxTools)
	if !ours {
		return nil, nil, false
	}
	sc, identified := s.scopeOf(ctx, req)
	grant := identified || s.anonymous != AnonymousOpen
	if !identified {
		sc = scope{key: KeyAnonymous}
	}
	if wait, ok := s.allow(sc.key); !ok {
		return nil, (&Error{Code: CodeRateLimited, Message: "Too many tool description reads; retry later.", RetryAfterMS: wait.Milliseconds() + 1}).rpcError(RPCRateLimited), true
	}
	if perr != nil {
		if se, _ := perr.(*selectionError); se != nil && se.missing {
			return nil, missingSelection(s.uri).rpcError(RPCInvalidParams), true
		}
		return nil, invalidSelection(s.uri, "Invalid tools parameter: %v.", perr).rpcError(RPCInvalidParams), true
	}
	listed, err := s.listTools(ctx, req, next)
	if err != nil {
		return nil, err, true
	}
	find := func(name string) *mcp.Tool {
		for _, t := range listed {
			if t.Name == name {
				return t
			}
		}
		return nil
	}
	if len(tools) > 8 { // an index pays off
		index := make(map[string]*mcp.Tool, len(listed))
		for _, t := range listed {
			index[t.Name] = t
		}
		find = func(name string) *mcp.Tool { return index[name] }
	}
	entries := make([]*entry, len(tools))
	versions := make(map[string]any, len(tools))
	granted := make(map[string]string, len(tools))
	var available []byte // the unknown-tool entries' list, made once
	size := 2
	for i, name := range tools {
		size += len(name) + 4
		if t := find(name); t != nil {
			e := s.entryFor(t)
			entries[i] = e
			versions[name], granted[name] = e.version, e.version
			size += len(e.json)
			continue
		}
		if available == nil {
			names := make([]string, 0, len(listed))
			for _, t := range listed {
				names = append(names, t.Name)
			}
			sort.Strings(names)
			available, _ = json.Marshal(names)
		}
		size += len(name) + len(available) + 64
	}
	var buf strings.Builder
	buf.Grow(size)
	buf.WriteByte('{')
	for i, name := range tools {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		if e := entries[i]; e != nil {
			buf.Write(e.json)
			continue
		}
		msg, _ := json.Marshal(fmt.Sprintf("Tool '%s' not found", name))
		buf.WriteString(`{"error":`)
		buf.Write(msg)
		buf.WriteString(`,"available_tools":`)
		buf.Write(available)
		buf.WriteByte('}')
	}
	buf.WriteByte('}')
	if grant && len(granted) > 0 {
		if err := s.store.Grant(ctx, sc.key, granted, s.ttl); err != nil {
			s.logger.Error("disclose: authorization store grant failed", "scope", sc.key, "error", err)
			return nil, (&Error{Code: CodeUnavailable, Message: "The tool authorization state is unavailable; nothing was authorized. Retry later."}).rpcError(RPCInternalError), true
		}
		s.watch(sc)
	}
	// Private and immediately stale: what a read returns depends on who
	// reads it, and a read authorizes, which a cached answer would not.
	res := &mcp.ReadResourceResult{}
	if multiRoundTrip(req.Session) {
		*res = completeReadTemplate
	}
	res.Cacheable = mcp.Cacheable{CacheScope: "private"}
	res.Contents = []*mcp.ResourceContents{{
		URI:      uri,
		MIMEType: "application/json",
		Text:     buf.String(),
		Meta:     mcp.Meta{MetaToolVersions: versions},
	}}
	return res, nil, true
}

// Results that answer a 2026-07-28 request must say resultType
// "complete", as the SDK's own handlers do; the field is unexported, and
// decoding is the only public way to set it. The templates are decoded
// once and copied.
var (
	completeCallTemplate = decodeTemplate[mcp.CallToolResult]()
	completeReadTemplate = decodeTemplate[mcp.ReadResourceResult]()
)

func decodeTemplate[T any]() T {
	var v T
	if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), &v); err != nil {
		panic(err)
	}
	return v
}

// completeCall returns a copy of r that says resultType "complete".
func completeCall(r *mcp.CallToolResult) *mcp.CallToolResult {
	out := completeCallTemplate
	out.Content, out.StructuredContent, out.IsError, out.Meta = r.Content, r.StructuredContent, r.IsError, r.Meta
	return &out
}

// multiRoundTrip reports whether the session's client speaks 2026-07-28 or
// later, by the SDK's own rule (no initialize means the latest version).
func multiRoundTrip(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	if p := ss.InitializeParams(); p != nil {
		return p.ProtocolVersion >= "2026-07-28"
	}
	return true
}

// allow takes one read from scope key's rate limiter; if none is left it
// says how long until one is.
func (s *Server) allow(key string) (time.Duration, bool) {
	return s.limiters.allow(key, time.Now())
}

// minimalList returns a copy of a tools/list result with minimal tools.
// The result is the SDK's, or a wrapper of it that another middleware
// (tool resolution) made: a struct embedding *mcp.ListToolsResult with its
// own Tools field, whose elements embed *mcp.Tool.
func (s *Server) minimalList(res mcp.Result) mcp.Result {
	if lr, ok := res.(*mcp.ListToolsResult); ok {
		out := *lr
		out.Tools = make([]*mcp.Tool, len(lr.Tools))
		for i, t := range lr.Tools {
			out.Tools[i] = Minimal(t, s.level)
		}
		return &out
	}
	v := reflect.ValueOf(res)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		s.logger.Error("disclose: tools/list result of unknown shape; listed in full", "type", fmt.Sprintf("%T", res))
		return res
	}
	tools := v.Elem().FieldByName("Tools")
	if !tools.IsValid() || tools.Kind() != reflect.Slice {
		s.logger.Error("disclose: tools/list result without tools; listed in full", "type", fmt.Sprintf("%T", res))
		return res
	}
	copied := reflect.New(v.Elem().Type())
	copied.Elem().Set(v.Elem())
	newTools := reflect.MakeSlice(tools.Type(), tools.Len(), tools.Len())
	toolType := reflect.TypeFor[*mcp.Tool]()
	for i := range tools.Len() {
		el := tools.Index(i)
		switch {
		case el.Type() == toolType:
			newTools.Index(i).Set(reflect.ValueOf(Minimal(el.Interface().(*mcp.Tool), s.level)))
		case el.Kind() == reflect.Pointer && el.Type().Elem().Kind() == reflect.Struct && !el.IsNil():
			f, ok := el.Type().Elem().FieldByName("Tool")
			if !ok || !f.Anonymous || f.Type != toolType || len(f.Index) != 1 {
				s.logger.Error("disclose: tools/list element of unknown shape; listed in full", "type", el.Type().String())
				return res
			}
			ne := reflect.New(el.Type().Elem())
			ne.Elem().Set(el.Elem())
			inner := ne.Elem().Field(f.Index[0])
			if !inner.IsNil() {
				inner.Set(reflect.ValueOf(Minimal(inner.Interface().(*mcp.Tool), s.level)))
			}
			newTools.Index(i).Set(ne)
		default:
			newTools.Index(i).Set(el)
		}
	}
	copied.Elem().FieldByName("Tools").Set(newTools)
	return copied.Interface().(mcp.Result)
}

// versionedResources adds the descriptions' version to the resource in a
// resources/list result.
func (s *Server) versionedResources(ctx context.Context, req mcp.Request, res mcp.Result, next mcp.MethodHandler) mcp.Result {
	lr, ok := res.(*mcp.ListResourcesResult)
	if !ok {
		return res
	}
	i := -1
	for j, r := range lr.Resources {
		if r.URI == s.uri {
			i = j
		}
	}
	if i < 0 {
		return res
	}
	tools, err := s.listTools(ctx, req, next)
	if err != nil {
		s.logger.Error("disclose: listing tools", "error", err)
		return res
	}
	h := sha256.New()
	for _, t := range tools {
		e := s.entryFor(t)
		fmt.Fprintf(h, "%d:%s%s;", len(t.Name), t.Name, e.version)
	}
	out := *lr
	out.Resources = slicesClone(lr.Resources)
	r := *lr.Resources[i]
	r.Meta = maps.Clone(r.Meta)
	if r.Meta == nil {
		r.Meta = mcp.Meta{}
	}
	r.Meta[MetaVersion] = hex.EncodeToString(h.Sum(nil))[:16]
	out.Resources[i] = &r
	return &out
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// embedded returns res as a *T, or the *T a wrapper struct embeds, or nil.
func embedded[T any](res mcp.Result) *T {
	if r, ok := any(res).(*T); ok {
		return r
	}
	v := reflect.ValueOf(res)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	want := reflect.TypeFor[*T]()
	st := v.Elem().Type()
	for i := range st.NumField() {
		if f := st.Field(i); f.Anonymous && f.Type == want {
			if p, ok := v.Elem().Field(i).Interface().(*T); ok {
				return p
			}
		}
	}
	return nil
}
