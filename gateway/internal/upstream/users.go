package upstream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2025-11-25 upstream that signs in binds its session to the user who
// made it (the go-sdk's handler answers another user's request on it with
// 403), so the requests of a principal whose grant is not the one the
// gateway's own session carries go on a session of that principal's,
// made on first use with their grant, beside the gateway's: the
// principal's calls, and the session's own requests (its event stream,
// its end), carry their grant only. They live as long as the gateway's
// session, and end after userSessionIdle unused; past MaxUserSessions the
// least recently used one unused for a minute ends, and a new principal
// is refused while none is. A 2026-07-28 upstream has no sessions:
// each request carries its own principal's grant.

// Bounds of the principals' sessions of one upstream.
const (
	MaxUserSessions = 256
	userSessionIdle = 10 * time.Minute
	// userSessionBusy: a session used this recently may have a call in
	// flight, and is not ended to make room.
	userSessionBusy = time.Minute
)

// userSessions are the principals' sessions of one upstream.
type userSessions struct {
	mu          sync.Mutex
	base        *mcp.ClientSession // the gateway's session they were made beside
	byPrincipal map[string]*userSession
}

type userSession struct {
	ready chan struct{} // closed once connected (or failed)
	ended chan struct{} // closed when the connected session ends
	cs    *mcp.ClientSession
	err   error
	used  time.Time
}

// gone reports a session that failed to connect or has ended.
func (s *userSession) gone() bool {
	select {
	case <-s.ready:
	default:
		return false
	}
	if s.err != nil {
		return true
	}
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// sessionFor returns the session a request in ctx goes on: the gateway's
// own, or for a principal whose grant is not the one it carries, on a
// legacy upstream that signs in, that principal's.
func (c *Conn) sessionFor(ctx context.Context) (*mcp.ClientSession, string, error) {
	cs, era, err := c.session()
	if err != nil || c.spec.SignIn == nil || era >= EraModern || c.spec.Connect != nil || c.spec.Transport == TransportStdio {
		return cs, era, err
	}
	p, ok := c.spec.SignIn.Principal(ctx, c.spec.Name)
	c.mu.Lock()
	own := c.identity
	c.mu.Unlock()
	if !ok || own != nil && *own == p {
		return cs, era, nil
	}
	us, err := c.users.get(ctx, c, cs, era, p)
	return us, era, err
}

// get returns principal's session beside base, making it on first use.
func (u *userSessions) get(ctx context.Context, c *Conn, base *mcp.ClientSession, era, principal string) (*mcp.ClientSession, error) {
	now := time.Now()
	u.mu.Lock()
	var closing []*mcp.ClientSession
	if u.base != base {
		closing = u.clearLocked()
		u.base = base
	}
	for p, s := range u.byPrincipal { // end the idle ones
		if s.cs != nil && now.Sub(s.used) > userSessionIdle {
			closing = append(closing, s.cs)
			delete(u.byPrincipal, p)
		}
	}
	s := u.byPrincipal[principal]
	fresh := s == nil || s.gone()
	if fresh {
		if len(u.byPrincipal) >= MaxUserSessions {
			old := u.evictLocked(now)
			if old == nil {
				u.mu.Unlock()
				for _, cs := range closing {
					_ = cs.Close()
				}
				return nil, fmt.Errorf("upstream %q has %d principals' sessions in use, its limit; try again shortly", c.spec.Name, MaxUserSessions)
			}
			closing = append(closing, old)
		}
		s = &userSession{ready: make(chan struct{}), ended: make(chan struct{})}
		if u.byPrincipal == nil {
			u.byPrincipal = map[string]*userSession{}
		}
		u.byPrincipal[principal] = s
	}
	s.used = now
	u.mu.Unlock()
	for _, cs := range closing {
		_ = cs.Close()
	}
	if fresh {
		cs, err := c.connectAs(era, principal)
		u.mu.Lock()
		kept := u.byPrincipal[principal] == s && u.base == base
		s.cs, s.err = cs, err
		if err == nil && !kept { // the gateway's session ended meanwhile: so does this one
			s.cs, s.err = nil, ErrSessionGone
		}
		if s.err != nil && u.byPrincipal[principal] == s {
			delete(u.byPrincipal, principal)
		}
		u.mu.Unlock()
		close(s.ready)
		switch {
		case err != nil:
		case !kept:
			_ = cs.Close()
		default:
			go func() { // a session that ends is made again at its next use
				_ = cs.Wait()
				close(s.ended)
			}()
		}
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return s.cs, s.err
}

// evictLocked removes the least recently used connected session unused
// for userSessionBusy, and returns it to close; nil if every one is busy.
func (u *userSessions) evictLocked(now time.Time) *mcp.ClientSession {
	var oldest string
	var at time.Time
	for p, s := range u.byPrincipal {
		if s.cs != nil && now.Sub(s.used) >= userSessionBusy && (at.IsZero() || s.used.Before(at)) {
			oldest, at = p, s.used
		}
	}
	if at.IsZero() {
		return nil
	}
	cs := u.byPrincipal[oldest].cs
	delete(u.byPrincipal, oldest)
	return cs
}

// clearLocked forgets every session and returns the connected ones to
// close.
func (u *userSessions) clearLocked() []*mcp.ClientSession {
	var out []*mcp.ClientSession
	for _, s := range u.byPrincipal {
		if s.cs != nil {
			out = append(out, s.cs)
		}
	}
	u.byPrincipal = nil
	return out
}

// closeBeside ends the sessions made beside base.
func (u *userSessions) closeBeside(base *mcp.ClientSession) {
	u.mu.Lock()
	var closing []*mcp.ClientSession
	if u.base == base {
		closing = u.clearLocked()
		u.base = nil
	}
	u.mu.Unlock()
	for _, cs := range closing {
		_ = cs.Close()
	}
}

// connectAs makes principal's session, in era, every request of which
// carries principal's grant.
func (c *Conn) connectAs(era, principal string) (*mcp.ClientSession, error) {
	// Not within the call's context: the session outlives it, and what
	// the call's context carries (the client's protocol version, as the
	// SDK's server put it there) must not reach this handshake.
	ctx, cancel := context.WithTimeout(context.Background(), c.spec.ConnectTimeout)
	defer cancel()
	hc, err := c.httpClient(&principal)
	if err != nil {
		return nil, err
	}
	f := c.flow.Load() // notifications are counted on the connection's flow
	var t mcp.Transport
	switch c.spec.Transport {
	case TransportSSE:
		t = wrapTransport{&mcp.SSEClientTransport{Endpoint: c.spec.URL, HTTPClient: hc}, f}
	default:
		hc.Transport = captureTransport{base: hc.Transport, flow: f}
		t = &mcp.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: hc}
	}
	cs, err := c.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return nil, fmt.Errorf("upstream %q: the session of %q: %w", c.spec.Name, principal, err)
	}
	return cs, nil
}
