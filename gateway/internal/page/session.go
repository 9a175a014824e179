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
	Create(ctx context.Context, key string, s Session) error
	// Get returns the session of key if it has not expired at now, and
	// ErrNoSession otherwise.
	Get(ctx context.Context, key string, now time.Time) (Session, error)
	Delete(ctx context.Context, key string) error
}

// MemSessions is the in-process Sessions, holding at most a bounded number
// of sessions: when full, expired ones go first, then the one closest to
// expiry.
type MemSessions struct {
	max int
	mu  sync.Mutex
	m   map[string]Session
}

// NewMemSessions returns a store of at most max sessions (zero means 64).
func NewMemSessions(max int) *MemSessions {
	if max <= 0 {
		max = 64
	}
	return &MemSessions{max: max, m: map[string]Session{}}
}

// Create implements Sessions.
func (m *MemSessions) Create(_ context.Context, key string, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) >= m.max {
		now := time.Now()
		for k, v := range m.m {
			if !now.Before(v.Expires) {
				delete(m.m, k)
			}
		}
	}
	for len(m.m) >= m.max {
		var first string
		for k, v := range m.m {
			if first == "" || v.Expires.Before(m.m[first].Expires) {
				first = k
			}
		}
		delete(m.m, first)
	}
	m.m[key] = s
	return nil
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
