package endpoint

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionlessVersion is the first MCP protocol version without sessions. A
// request at this version or later is served by the stateless SDK handler.
const SessionlessVersion = "2026-07-28"

// Header names, as the SDK spells them (net/http canonicalises lookups).
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	sessionIDHeader       = "Mcp-Session-Id"
)

// Options configures [NewHandler]. A nil *Options means the zero value.
type Options struct {
	// Logger receives one debug record per request saying where it was
	// routed and why, and is passed to both SDK handlers.
	// If nil, nothing is logged (unless Legacy or Stateless set a Logger).
	Logger *slog.Logger

	// JSONResponse makes both SDK handlers answer a POST with a single
	// application/json body instead of a text/event-stream
	// (see [mcp.StreamableHTTPOptions.JSONResponse]).
	// If false, the SDK default applies: responses are event streams.
	JSONResponse bool

	// SessionTimeout closes a legacy (2025-11-25 and older) session after it
	// has seen no HTTP request for this long
	// (see [mcp.StreamableHTTPOptions.SessionTimeout]).
	// If zero, legacy sessions live until the client deletes them.
	SessionTimeout time.Duration

	// Legacy, if non-nil, is the base configuration of the stateful handler
	// that serves legacy clients; it is copied, its Stateless field is
	// forced to false, and the non-zero fields above are applied on top.
	// If nil, the SDK defaults are used.
	Legacy *mcp.StreamableHTTPOptions

	// Stateless, if non-nil, is the base configuration of the stateless
	// handler that serves 2026-07-28 clients; it is copied, its Stateless
	// field is forced to true, and Logger and JSONResponse above are applied
	// on top when non-zero. Its MaxRequestBodyBytes also bounds how much of a
	// header-less request body NewHandler reads to route it.
	// If nil, the SDK defaults are used.
	Stateless *mcp.StreamableHTTPOptions
}

// NewHandler returns an http.Handler that serves server to MCP clients of
// both protocol eras: requests of 2026-07-28 and later go to a stateless SDK
// handler, all others to a stateful one with sessions. See the package
// documentation for the routing rules. A nil opts means default options;
// server must not be nil.
//
// The handler does not care about the URL path; mount it where clients
// expect it (conventionally [Path]).
func NewHandler(server *mcp.Server, opts *Options) http.Handler {
	if server == nil {
		panic("endpoint.NewHandler: nil server")
	}
	if opts == nil {
		opts = &Options{}
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	legacy := opts.handlerOptions(opts.Legacy, false)
	stateless := opts.handlerOptions(opts.Stateless, true)

	limit := stateless.MaxRequestBodyBytes
	if limit <= 0 {
		// Zero means the SDK default; a negative value disables the SDK's
		// limit, but routing never reads an unbounded body.
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &router{
		stateful:  mcp.NewStreamableHTTPHandler(getServer, legacy),
		stateless: mcp.NewStreamableHTTPHandler(getServer, stateless),
		peekLimit: limit,
		logger:    logger,
	}
}

// handlerOptions returns a copy of base (or of the zero options) for one of
// the two SDK handlers, with o's shorthand fields applied on top.
func (o *Options) handlerOptions(base *mcp.StreamableHTTPOptions, stateless bool) *mcp.StreamableHTTPOptions {
	var h mcp.StreamableHTTPOptions
	if base != nil {
		h = *base
	}
	h.Stateless = stateless
	if o.Logger != nil {
		h.Logger = o.Logger
	}
	if o.JSONResponse {
		h.JSONResponse = true
	}
	if !stateless && o.SessionTimeout != 0 {
		h.SessionTimeout = o.SessionTimeout
	}
	return &h
}

// router sends each request to the SDK handler of its protocol era.
type router struct {
	stateful  http.Handler // sessions; protocol 2025-11-25 and older
	stateless http.Handler // no sessions; protocol 2026-07-28 and later
	peekLimit int64        // most body bytes read to route a header-less POST
	logger    *slog.Logger
}

func (rt *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sessionless, reason := rt.route(req)
	if sessionless {
		rt.logger.DebugContext(req.Context(), "mcp request routed", "handler", "stateless", "reason", reason, "method", req.Method)
		rt.stateless.ServeHTTP(w, req)
		return
	}
	rt.logger.DebugContext(req.Context(), "mcp request routed", "handler", "stateful", "reason", reason, "method", req.Method)
	rt.stateful.ServeHTTP(w, req)
}

// route reports whether req belongs to the sessionless era, and a short
// reason for the log. It may replace req.Body with an equivalent reader.
func (rt *router) route(req *http.Request) (sessionless bool, reason string) {
	if v := req.Header.Get(protocolVersionHeader); v != "" {
		if !isVersion(v) {
			return false, "malformed version header"
		}
		if v >= SessionlessVersion {
			return true, "version header"
		}
		return false, "version header"
	}
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		return false, "no version header"
	}
	if req.Header.Get(sessionIDHeader) != "" {
		// The request belongs to a legacy session; its owner answers it.
		return false, "session id"
	}
	v, ok := rt.peekVersion(req)
	if !ok {
		return false, "no version in header or body"
	}
	if isVersion(v) && v >= SessionlessVersion {
		return true, "version in body _meta"
	}
	return false, "version in body _meta"
}

// peekVersion reads at most rt.peekLimit bytes of req.Body to find
// params._meta["io.modelcontextprotocol/protocolVersion"], and puts back a
// body that yields exactly the same bytes (and the same read error, if any)
// as the original. A body over the limit is not parsed: the SDK handler
// that receives it enforces its own limit and answers 413.
func (rt *router) peekVersion(req *http.Request) (string, bool) {
	orig := req.Body
	buf, err := io.ReadAll(io.LimitReader(orig, rt.peekLimit+1))
	var rest io.Reader = orig
	if err != nil {
		rest = errReader{err}
	}
	req.Body = readCloser{io.MultiReader(bytes.NewReader(buf), rest), orig}
	if err != nil || int64(len(buf)) > rt.peekLimit {
		return "", false
	}
	return metaProtocolVersion(buf)
}

// metaProtocolVersion extracts params._meta["io.modelcontextprotocol/protocolVersion"]
// from a single JSON-RPC message. Keys match exactly, as in the SDK's own
// decoder; a batch (JSON array) or any other shape yields false.
func metaProtocolVersion(body []byte) (string, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return "", false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return "", false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil {
		return "", false
	}
	var v string
	if json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &v) != nil || v == "" {
		return "", false
	}
	return v, true
}

// isVersion reports whether v has the shape of an MCP protocol version,
// YYYY-MM-DD, so that plain string comparison orders versions by date.
func isVersion(v string) bool {
	if len(v) != len("2006-01-02") {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch i {
		case 4, 7:
			if v[i] != '-' {
				return false
			}
		default:
			if v[i] < '0' || v[i] > '9' {
				return false
			}
		}
	}
	return true
}

// readCloser reads from one reader and closes another: the restored body
// closes the original one.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader always fails with err, so that a read error met while peeking
// reaches the SDK handler after the bytes read before it.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
