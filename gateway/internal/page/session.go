package page

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// Session is a signed-in person's session.
type Session struct {
	Identity Identity
	// CSRF is the token every POST of the session must carry.
	CSRF    string
	Created time.Time
	Expires time.Time
}

// ErrNoSession is returned by Sessions.Get for an unknown or expired
// session.
var ErrNoSession = errors.New("no such session")

// Sessions keeps sessions by key, a hash of the session cookie (the cookie
// itself is never stored). The in-process [MemSessions] serves one
// replica; replicas behind a load balancer share a store, or pin the page
// to one replica.
type Sessions interface {
	// Create stores s under key, within bounds as MemSessions keeps them,
	// or returns ErrSessionsFull.
	Create(ctx context.Context, key string, s Session) error
	// Get returns the session of key if it has not expired at now, and
	// ErrNoSession otherwise.
	Get(ctx context.Context, key string, now time.Time) (Session, error)
	Delete(ctx context.Context, key string) error
}

// ErrSessionsFull is returned by Sessions.Create when every session it
// could drop to make room is an admin's.
var ErrSessionsFull = errors.New("too many page sessions")

// MemSessionsOptions bound a MemSessions; nil means the defaults.
type MemSessionsOptions struct {
	// Max bounds the sessions held. Zero means 256.
	Max int
	// PerPrincipal bounds one principal's sessions: its next sign-in drops
	// its oldest. Zero means 8; it is at most Max.
	PerPrincipal int
}

// MemSessions is the in-process Sessions. A principal holds at most
// PerPrincipal sessions, its new one replacing its oldest; when the store
// is full, expired sessions go first, then the oldest session of the
// principal holding the most. An admin's session is never dropped for
// another principal's sign-in, so no principal can sign the operator out.
type MemSessions struct {
	max, perPrincipal int
	mu                sync.Mutex
	m                 map[string]Session
}

// NewMemSessions returns an empty store bounded by o.
func NewMemSessions(o *MemSessionsOptions) *MemSessions {
	var opts MemSessionsOptions
	if o != nil {
		opts = *o
	}
	if opts.Max <= 0 {
		opts.Max = 256
	}
	if opts.PerPrincipal <= 0 {
		opts.PerPrincipal = 8
	}
	return &MemSessions{max: opts.Max, perPrincipal: min(opts.PerPrincipal, opts.Max), m: map[string]Session{}}
}

// Create implements Sessions.
func (m *MemSessions) Create(_ context.Context, key string, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// One's own: the same principal, and admin only if s is, so that no
	// sign-in that is not an admin's drops an admin's session.
	own := func(v Session) bool {
		return v.Identity.Principal == s.Identity.Principal && v.Identity.Admin == s.Identity.Admin
	}
	if m.count(own) >= m.perPrincipal || len(m.m) >= m.max {
		m.dropExpired(time.Now())
	}
	if m.count(own) >= m.perPrincipal {
		delete(m.m, m.oldest(own))
	}
	if len(m.m) >= m.max {
		largest, ok := m.largestNonAdmin()
		if !ok {
			return ErrSessionsFull
		}
		delete(m.m, m.oldest(func(v Session) bool { return !v.Identity.Admin && v.Identity.Principal == largest }))
	}
	m.m[key] = s
	return nil
}

// count is the number of sessions that match.
func (m *MemSessions) count(match func(Session) bool) int {
	n := 0
	for _, v := range m.m {
		if match(v) {
			n++
		}
	}
	return n
}

func (m *MemSessions) dropExpired(now time.Time) {
	for k, v := range m.m {
		if !now.Before(v.Expires) {
			delete(m.m, k)
		}
	}
}

// oldest is the key of the earliest created session that matches.
func (m *MemSessions) oldest(match func(Session) bool) string {
	var first string
	for k, v := range m.m {
		if match(v) && (first == "" || v.Created.Before(m.m[first].Created)) {
			first = k
		}
	}
	return first
}

// largestNonAdmin is the principal holding the most sessions that are not
// an admin's; false when every session is an admin's.
func (m *MemSessions) largestNonAdmin() (string, bool) {
	n := map[string]int{}
	largest, found := "", false
	for _, v := range m.m {
		if v.Identity.Admin {
			continue
		}
		p := v.Identity.Principal
		n[p]++
		if !found || n[p] > n[largest] {
			largest, found = p, true
		}
	}
	return largest, found
}

// Get implements Sessions.
func (m *MemSessions) Get(_ context.Context, key string, now time.Time) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[key]
	if !ok {
		return Session{}, ErrNoSession
	}
	if !now.Before(s.Expires) {
		delete(m.m, key)
		return Session{}, ErrNoSession
	}
	return s, nil
}

// Delete implements Sessions.
func (m *MemSessions) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
	return nil
}

// sessionKey is the store's key of a session cookie's value.
func sessionKey(cookie string) string {
	h := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(h[:])
}
