package entry

//lint:file-ignore SA1019 a legacy session's log level is read to filter the log messages of its calls as the SDK does; protocol 2026-07-28 deprecates logging (SEP-2577) but 2025-11-25 clients still set it.

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// live is what the entry knows of the legacy sessions whose calls it
// serves itself: the calls in flight (for notifications/cancelled and
// DELETE), the questions it put to their clients (for the answers, which
// come in POSTs of their own), and each session's log level. Each entry
// belongs to the principal of the request that made it: another
// principal's POST with the same session id touches none of them.
type live struct {
	mu      sync.Mutex
	calls   map[liveKey]liveCall
	waiters map[liveKey]waiter
	waiting map[string]int // questions waiting, by principal
	asked   map[string]int // questions waiting, by session
	levels  map[string]mcp.LoggingLevel
}

// liveKey names a request of a session by its raw JSON id.
type liveKey struct{ session, id string }

type liveCall struct {
	principal string
	cancel    context.CancelFunc
}

type waiter struct {
	principal string
	ch        chan *Message
}

func (l *live) init() {
	l.calls = map[liveKey]liveCall{}
	l.waiters = map[liveKey]waiter{}
	l.waiting = map[string]int{}
	l.asked = map[string]int{}
	l.levels = map[string]mcp.LoggingLevel{}
}

// start records a call in flight; false if one with that id is.
func (l *live) start(k liveKey, principal string, cancel context.CancelFunc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, busy := l.calls[k]; busy {
		return false
	}
	l.calls[k] = liveCall{principal, cancel}
	return true
}

func (l *live) end(k liveKey) {
	l.mu.Lock()
	delete(l.calls, k)
	l.mu.Unlock()
}

// cancel cancels the call a notifications/cancelled names, if it is one
// of this principal's calls in flight; it reports whether it did.
func (l *live) cancel(session, principal string, params json.RawMessage) bool {
	rid, ok, _ := rawjson.Get(params, "requestId")
	if !ok {
		return false
	}
	l.mu.Lock()
	c, ok := l.calls[liveKey{session, string(rid)}]
	l.mu.Unlock()
	if !ok || c.principal != principal {
		return false
	}
	c.cancel()
	return true
}

// wait registers a question put to a client; false when too many wait,
// in all, for this principal or in this session.
func (l *live) wait(k liveKey, principal string) (<-chan *Message, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) >= maxWaiting || l.waiting[principal] >= maxWaitingPerPrincipal || l.asked[k.session] >= maxWaitingPerSession {
		return nil, false
	}
	ch := make(chan *Message, 1)
	l.waiters[k] = waiter{principal, ch}
	l.waiting[principal]++
	l.asked[k.session]++
	return ch, true
}

// unwait ends the wait of a question wait registered.
func (l *live) unwait(k liveKey, principal string) {
	l.mu.Lock()
	delete(l.waiters, k)
	if l.waiting[principal]--; l.waiting[principal] <= 0 {
		delete(l.waiting, principal)
	}
	if l.asked[k.session]--; l.asked[k.session] <= 0 {
		delete(l.asked, k.session)
	}
	l.mu.Unlock()
}

// deliver hands a client's response to the question it answers, if it is
// one of this principal's; it reports whether it did.
func (l *live) deliver(session, principal string, m *Message) bool {
	if m.ID == nil || m.ID[0] != '"' {
		return false
	}
	k := liveKey{session, string(m.ID)}
	l.mu.Lock()
	w, ok := l.waiters[k]
	if ok && w.principal == principal {
		delete(l.waiters, k)
	}
	l.mu.Unlock()
	if !ok || w.principal != principal {
		return false
	}
	w.ch <- m // buffered, and sent once
	return true
}

// endSession cancels a session's calls in flight and forgets the
// questions put to it, when its client deletes it. Its log level is
// forgotten when the SDK ends the session (TrackLogLevels): a DELETE by
// someone else, which the SDK refuses, changes nothing.
func (l *live) endSession(session, principal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.calls {
		if k.session == session && c.principal == principal {
			c.cancel()
		}
	}
	for k, w := range l.waiters {
		if k.session == session && w.principal == principal {
			delete(l.waiters, k)
		}
	}
}

// TrackLogLevels is a receiving middleware of the SDK server: it notes
// each legacy session's logging/setLevel, so that log messages of the
// calls the entry serves reach the client only at or above its level, as
// the SDK's own ServerSession.Log filters them. A session's level is
// forgotten when the session ends.
func (e *Entry) TrackLogLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p == nil || ss == nil || ss.ID() == "" {
			return res, err
		}
		id := ss.ID()
		l := &e.live
		l.mu.Lock()
		_, known := l.levels[id]
		l.levels[id] = p.Level
		l.mu.Unlock()
		if !known {
			// One goroutine per session that set a level, ending with it.
			go func() {
				_ = ss.Wait()
				l.mu.Lock()
				delete(l.levels, id)
				l.mu.Unlock()
			}()
		}
		return res, err
	}
}

// logLevels in the order of RFC 5424, least severe first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelIndex(l mcp.LoggingLevel) int {
	for i, v := range logLevels {
		if v == l {
			return i
		}
	}
	return -1
}

// wantsLog reports whether a log message at level reaches the client of
// session: not until it set a level (as the SDK's server), then at or
// above it.
func (l *live) wantsLog(session string, level mcp.LoggingLevel) bool {
	l.mu.Lock()
	min, ok := l.levels[session]
	l.mu.Unlock()
	return ok && levelIndex(level) >= levelIndex(min)
}
