package entry

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of sessionChecks.
const (
	// checkEvery is how long a legacy session, once the SDK accepted a
	// request of it, takes calls that bypass the SDK before it is checked
	// again. Each check is a request the SDK serves, so it also keeps the
	// session from closing as idle.
	checkEvery = 5 * time.Second
	// maxChecked bounds the sessions remembered; past it, all are
	// forgotten and checked again.
	maxChecked = 4096
)

// sessionChecks remembers the legacy client sessions the SDK server
// recently accepted a request of, for the principal it was made by: a
// call passed through without the SDK must belong to a session the SDK
// would have served (it exists, is initialized, and belongs to that
// principal), and must count as the session's activity.
type sessionChecks struct {
	mu sync.Mutex
	m  map[string]sessionCheck
}

type sessionCheck struct {
	principal string
	at        time.Time
	ss        *mcp.ServerSession
}

// check returns the SDK's session of id if it may take a passed-through
// call from principal, nil if not. When the last check is older than
// checkEvery it asks the SDK server, through next, to answer a ping in
// that session with r's credentials; the SDK refuses a session it does not
// hold or that belongs to someone else.
func (s *sessionChecks) check(next http.Handler, r *http.Request, id, principal string, server *mcp.Server) *mcp.ServerSession {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.m[id]
	s.mu.Unlock()
	if ok && c.principal == principal && now.Sub(c.at) < checkEvery {
		return c.ss
	}
	ping, err := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.String(),
		bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":"preflight-session-check","method":"ping"}`)))
	if err != nil {
		return nil
	}
	ping.Header = r.Header.Clone()
	ping.Header.Set("Content-Type", "application/json")
	ping.Header.Set("Accept", "application/json, text/event-stream")
	ping.Header.Del("Content-Length")
	ping.Host, ping.RemoteAddr = r.Host, r.RemoteAddr
	rec := &statusRecorder{header: http.Header{}}
	next.ServeHTTP(rec, ping)
	if rec.status != http.StatusOK {
		s.forget(id)
		return nil
	}
	var ss *mcp.ServerSession
	for x := range server.Sessions() {
		if x.ID() == id {
			ss = x
			break
		}
	}
	if ss == nil || ss.InitializeParams() == nil {
		return nil
	}
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxChecked {
		s.m = map[string]sessionCheck{}
	}
	s.m[id] = sessionCheck{principal: principal, at: now, ss: ss}
	s.mu.Unlock()
	return ss
}

// forget drops a session (deleted, or refused by the SDK).
func (s *sessionChecks) forget(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// statusRecorder keeps the status of a response and discards its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (w *statusRecorder) Header() http.Header { return w.header }
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

// Flush implements http.Flusher: the SDK streams its answer.
func (w *statusRecorder) Flush() {}
