package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// (see [mcp.StreamableHTTPOptions.SessionTimeout]); a request in
	// progress holds it open. The client's next request then gets 404, and
	// a client of 2025-11-25 starts a new session; a client that idles
	// longer should ping. Zero means Legacy.SessionTimeout if that is set,
	// else [DefaultSessionTimeout]; negative means sessions live until the
	// client deletes them, which a client that walks away never does.
	SessionTimeout time.Duration

	// MaxSessions caps the legacy sessions open at once. Past it, a request
	// that would open one is answered with HTTP 503 and the JSON-RPC error
	// -32000, and nothing is created; requests of open sessions and of
	// 2026-07-28 (which has no sessions) are served as usual. Zero means
	// [DefaultMaxSessions]; negative means no cap.
	MaxSessions int

	// MaxSessionsPerUser caps the legacy sessions one user (the UserID of
	// the request's auth.TokenInfo, "" for all unauthenticated clients) has
	// open at once, refused as past MaxSessions, so that one client cannot
	// take every session. Zero means [DefaultMaxSessionsPerUser]; negative
	// means no cap.
	MaxSessionsPerUser int

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

// Defaults of [Options].
const (
	DefaultSessionTimeout     = 10 * time.Minute
	DefaultMaxSessions        = 1000
	DefaultMaxSessionsPerUser = 64
)

// CodeTooManySessions is the JSON-RPC error code of a request refused
// because [Options.MaxSessions] legacy sessions are open, or
// [Options.MaxSessionsPerUser] of its user's.
const CodeTooManySessions = -32000

// NewHandler returns an http.Handler that serves server to MCP clients of
// both protocol eras: requests of 2026-07-28 and later go to a stateless SDK
// handler, all others to a stateful one with sessions. See the package
// documentation for the routing rules. A nil opts means default options;
// server must not be nil.
//
// The handler does not care about the URL path; mount it where clients
// expect it (conventionally [Path]).
func NewHandler(server *mcp.Server, opts *Options) *Handler {
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
	maxSessions := opts.MaxSessions
	if maxSessions == 0 {
		maxSessions = DefaultMaxSessions
	}
	perUser := opts.MaxSessionsPerUser
	if perUser == 0 {
		perUser = DefaultMaxSessionsPerUser
	}
	h := &Handler{
		stateful:  mcp.NewStreamableHTTPHandler(getServer, legacy),
		stateless: mcp.NewStreamableHTTPHandler(getServer, stateless),
		peekLimit: limit,
		logger:    logger,
		server:    server,
	}
	h.sessions.max, h.sessions.perUser, h.sessions.live = maxSessions, perUser, h.liveIDs
	return h
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
	if !stateless {
		switch {
		case o.SessionTimeout < 0:
			h.SessionTimeout = 0 // the SDK's "never"
		case o.SessionTimeout > 0:
			h.SessionTimeout = o.SessionTimeout
		case h.SessionTimeout <= 0:
			h.SessionTimeout = DefaultSessionTimeout
		}
	}
	return &h
}

// A Handler serves one MCP server to clients of both protocol eras; see
// [NewHandler].
type Handler struct {
	stateful  http.Handler // sessions; protocol 2025-11-25 and older
	stateless http.Handler // no sessions; protocol 2026-07-28 and later
	peekLimit int64        // most body bytes read to route a header-less POST
	logger    *slog.Logger
	server    *mcp.Server
	sessions  sessionCount
	inflight  inFlight
}

// Sessions returns the number of legacy sessions open, counting those
// being opened by a request in progress.
func (h *Handler) Sessions() int { return h.sessions.load() }

// Guard returns next behind h's check of session owners: a request that
// names a legacy session another user opened is answered 404, as for a
// session that does not exist, before next sees it. A handler that acts
// on session ids before h does (cancelling, deleting) goes behind it.
func (h *Handler) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h.foreign(w, req) {
			return
		}
		next.ServeHTTP(w, req)
	})
}

// foreign reports whether req names a legacy session another user opened,
// and then answers it 404.
func (h *Handler) foreign(w http.ResponseWriter, req *http.Request) bool {
	id := req.Header.Get(sessionIDHeader)
	if id == "" || h.sessions.ownedBy(id, userOf(req)) {
		return false
	}
	h.logger.InfoContext(req.Context(), "mcp request refused: the session belongs to another user", "method", req.Method)
	http.Error(w, "session not found", http.StatusNotFound)
	return true
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodPost && isArray(req, h.peekLimit) {
		h.logger.DebugContext(req.Context(), "mcp request refused", "reason", "JSON array body")
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, batchMessage)
		return
	}
	sessionless, reason := h.route(req)
	if sessionless {
		h.logger.DebugContext(req.Context(), "mcp request routed", "handler", "stateless", "reason", reason, "method", req.Method)
		h.stateless.ServeHTTP(w, req)
		return
	}
	h.logger.DebugContext(req.Context(), "mcp request routed", "handler", "stateful", "reason", reason, "method", req.Method)
	if id := req.Header.Get(sessionIDHeader); id != "" {
		if h.foreign(w, req) {
			return
		}
		switch req.Method {
		case http.MethodPost:
			// Requests of a session are tracked while they run, so that
			// ending the session can cancel them.
			if rid := requestID(req, h.peekLimit); rid != nil {
				done := h.inflight.add(id, string(rid))
				defer done()
			}
		case http.MethodDelete:
			h.cancelInFlight(req, id)
		}
		h.stateful.ServeHTTP(w, req)
		return
	}
	if req.Method != http.MethodPost {
		h.stateful.ServeHTTP(w, req)
		return
	}
	// A POST without a session id may open a session: count it before
	// the SDK handler runs, so that the caps hold under concurrency.
	user := userOf(req)
	switch h.sessions.reserve(user) {
	case capAll:
		if h.sessions.warnDue(time.Now()) {
			h.logger.WarnContext(req.Context(), "mcp requests refused: too many legacy sessions (logged once a minute)", "max", h.sessions.max)
		}
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusServiceUnavailable, requestID(req, h.peekLimit), CodeTooManySessions,
			fmt.Sprintf("Server busy: this server keeps at most %d legacy sessions and all are open. Retry later, or use protocol %s, which needs no session.", h.sessions.max, SessionlessVersion))
		return
	case capUser:
		h.logger.InfoContext(req.Context(), "mcp request refused: too many legacy sessions of one user", "max", h.sessions.perUser)
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, requestID(req, h.peekLimit), CodeTooManySessions,
			fmt.Sprintf("Too many sessions: you have %d legacy sessions open, the most one user may. End sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), wait for idle ones to close, or use protocol %s, which needs no session.", h.sessions.perUser, SessionlessVersion))
		return
	}
	h.stateful.ServeHTTP(w, req)
	h.watch(w.Header().Get(sessionIDHeader), user)
}

// userOf returns the user the SDK binds a session to: the UserID of the
// request's token, "" without one.
func userOf(req *http.Request) string {
	if ti := auth.TokenInfoFromContext(req.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// cancelInFlight cancels the requests the client has in flight in the
// session it is deleting, as notifications/cancelled from the client would:
// the SDK closes a session only once its requests have finished, and a
// request waiting for something only the client could give (the answer to
// a question) would otherwise hold the session and the DELETE until its own
// timeout.
func (h *Handler) cancelInFlight(del *http.Request, session string) {
	for _, rid := range h.inflight.ids(session) {
		body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + rid + `,"reason":"the client ended the session"}}`
		req, err := http.NewRequestWithContext(del.Context(), http.MethodPost, del.URL.String(), strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header = del.Header.Clone() // the session, its version, its credentials
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Host, req.RemoteAddr = del.Host, del.RemoteAddr
		h.stateful.ServeHTTP(discardWriter{}, req)
	}
}

// inFlight holds the ids of the requests in progress per legacy session.
// It holds one entry per POST being served, so it is bounded by them.
type inFlight struct {
	mu sync.Mutex
	m  map[string]map[string]int // session -> request id (raw JSON) -> count
}

// add records request id of session and returns the function that
// forgets it.
func (f *inFlight) add(session, id string) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]map[string]int{}
	}
	if f.m[session] == nil {
		f.m[session] = map[string]int{}
	}
	f.m[session][id]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.m[session][id]--; f.m[session][id] <= 0 {
			delete(f.m[session], id)
		}
		if len(f.m[session]) == 0 {
			delete(f.m, session)
		}
	}
}

func (f *inFlight) ids(session string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.m[session]))
	for id := range f.m[session] {
		ids = append(ids, id)
	}
	return ids
}

// discardWriter is the response writer of a request whose answer nobody
// reads.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// watch records the session the request of user opened, if it is still
// open, and settles the request's reservation either way.
func (h *Handler) watch(id, user string) {
	open := false
	if id != "" {
		for ss := range h.server.Sessions() {
			if ss.ID() == id {
				open = true
				break
			}
		}
	}
	h.sessions.settle(id, user, open)
}

// liveIDs returns the ids of the server's open sessions.
func (h *Handler) liveIDs() map[string]bool {
	live := map[string]bool{}
	for ss := range h.server.Sessions() {
		live[ss.ID()] = true
	}
	return live
}

// sessionCount counts open legacy sessions against a cap, in all and per
// user. It records the ids of the sessions opened through the handler,
// with their users, and forgets those the server no longer holds when it
// checks a cap, when it is asked for the count and, without a cap, each
// time the record doubles: no goroutine waits on a session.
type sessionCount struct {
	max     int // <= 0: no cap
	perUser int // <= 0: no cap
	live    func() map[string]bool

	mu        sync.Mutex
	pending   map[string]int    // requests that may open a session, by user
	pendingN  int               // their sum
	ids       map[string]string // sessions opened, open when last checked -> user
	users     map[string]int    // sessions in ids, by user
	nextPrune int               // record size that triggers a check without a cap

	lastWarn time.Time // of a refusal, to log them once a minute
}

// Results of sessionCount.reserve.
const (
	capNone = iota // reserved
	capAll         // every session the handler keeps is open
	capUser        // every session the user may have is open
)

// warnDue reports whether a refusal at now should be logged.
func (c *sessionCount) warnDue(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.lastWarn) < time.Minute {
		return false
	}
	c.lastWarn = now
	return true
}

// reserve counts a request of user that may open a session, unless a cap
// is reached; it says which.
func (c *sessionCount) reserve(user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	full := func() int {
		switch {
		case c.max > 0 && c.pendingN+len(c.ids) >= c.max:
			return capAll
		case c.perUser > 0 && c.pending[user]+c.users[user] >= c.perUser:
			return capUser
		}
		return capNone
	}
	if full() != capNone || len(c.ids) >= max(c.nextPrune, 64) {
		c.prune()
		c.nextPrune = 2 * len(c.ids)
	}
	if r := full(); r != capNone {
		return r
	}
	if c.pending == nil {
		c.pending = map[string]int{}
	}
	c.pending[user]++
	c.pendingN++
	return capNone
}

// settle ends a reservation of user; open says the request opened
// session id.
func (c *sessionCount) settle(id, user string, open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[user]--; c.pending[user] <= 0 {
		delete(c.pending, user)
	}
	c.pendingN--
	if open {
		if c.ids == nil {
			c.ids, c.users = map[string]string{}, map[string]int{}
		}
		if _, dup := c.ids[id]; !dup {
			c.users[user]++
		}
		c.ids[id] = user
	}
}

// ownedBy reports whether session id may be used by user: it was opened
// by user, or not through this handler (the server answers for it).
func (c *sessionCount) ownedBy(id, user string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	owner, ok := c.ids[id]
	return !ok || owner == user
}

// prune forgets the sessions the server no longer holds; c.mu is held.
func (c *sessionCount) prune() {
	if len(c.ids) == 0 || c.live == nil {
		return
	}
	live := c.live()
	for id, user := range c.ids {
		if !live[id] {
			delete(c.ids, id)
			if c.users[user]--; c.users[user] <= 0 {
				delete(c.users, user)
			}
		}
	}
}

func (c *sessionCount) load() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune()
	return c.pendingN + len(c.ids)
}

// isArray reports whether req's body, past leading JSON whitespace (at
// most limit bytes of it), starts a JSON array. It puts back a body that
// yields the same bytes.
func isArray(req *http.Request, limit int64) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return false
	}
	orig := req.Body
	head := make([]byte, 0, 128) // what was read: a request's first bytes, no more than it needs
	var rest io.Reader = orig
	array := false
	for {
		if len(head) == cap(head) {
			head = slices.Grow(head, len(head))
		}
		n, err := orig.Read(head[len(head):cap(head)])
		from := len(head)
		head = head[:from+n]
		if err != nil && err != io.EOF {
			rest = errReader{err} // the same error, after the same bytes
		}
		if i := firstNonSpace(head[from:]); i >= 0 {
			array = head[from+i] == '[' && int64(from+i) <= limit
			break
		}
		if err != nil || int64(len(head)) > limit {
			break
		}
	}
	req.Body = readCloser{io.MultiReader(bytes.NewReader(head), rest), orig}
	return array
}

// firstNonSpace returns the index of the first byte of b that is not JSON
// whitespace, or -1.
func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return -1
}

// requestID returns the id of the JSON-RPC request in req's body, if it
// is a request with a usable id, reading at most limit bytes; it puts back
// a body that yields the same bytes.
func requestID(req *http.Request, limit int64) json.RawMessage {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	orig := req.Body
	buf, err := io.ReadAll(io.LimitReader(orig, limit))
	var rest io.Reader = orig
	if err != nil {
		rest = errReader{err} // the same error, after the same bytes
	}
	req.Body = readCloser{io.MultiReader(bytes.NewReader(buf), rest), orig}
	if err != nil {
		return nil
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(buf, &msg) != nil || len(msg.ID) == 0 || msg.Method == "" {
		return nil
	}
	if c := msg.ID[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return nil
	}
	return msg.ID
}

// writeError writes one JSON-RPC error response with the HTTP status.
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(errorReply{JSONRPC: "2.0", ID: id, Error: wireError{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// route reports whether req belongs to the sessionless era, and a short
// reason for the log. It may replace req.Body with an equivalent reader.
func (h *Handler) route(req *http.Request) (sessionless bool, reason string) {
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
	v, ok := h.peekVersion(req)
	if !ok {
		return false, "no version in header or body"
	}
	if isVersion(v) && v >= SessionlessVersion {
		return true, "version in body _meta"
	}
	return false, "version in body _meta"
}

// peekVersion reads at most h.peekLimit bytes of req.Body to find
// params._meta["io.modelcontextprotocol/protocolVersion"], and puts back a
// body that yields exactly the same bytes (and the same read error, if any)
// as the original. A body over the limit is not parsed: the SDK handler
// that receives it enforces its own limit and answers 413.
func (h *Handler) peekVersion(req *http.Request) (string, bool) {
	orig := req.Body
	buf, err := io.ReadAll(io.LimitReader(orig, h.peekLimit+1))
	var rest io.Reader = orig
	if err != nil {
		rest = errReader{err}
	}
	req.Body = readCloser{io.MultiReader(bytes.NewReader(buf), rest), orig}
	if err != nil || int64(len(buf)) > h.peekLimit {
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
