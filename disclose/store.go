package disclose

import (
	"context"
	"sync"
	"time"
)

// Store holds authorization state: per scope key, the tools whose
// descriptions were fetched, each with the version that was fetched. A
// Store must be safe for concurrent use. [NewMemoryStore] keeps the state
// in this process; package
// [github.com/preflightmcp/preflight/gateway/internal/redisstore] shares it between
// replicas.
type Store interface {
	// Grant records that the tools (name to version) were fetched in
	// scope key, adding to what the scope already holds. The scope's
	// state expires ttl after its last grant (ttl > 0).
	Grant(ctx context.Context, key string, tools map[string]string, ttl time.Duration) error
	// Lookup returns the version of tool granted in scope key, and
	// whether it was granted (and has not expired).
	Lookup(ctx context.Context, key, tool string) (version string, ok bool, err error)
	// Forget drops scope key's state (its session ended).
	Forget(ctx context.Context, key string) error
}

// MemoryOptions configure [NewMemoryStore]. The zero value is ready to use.
type MemoryOptions struct {
	// Now is the clock; nil means time.Now. Tests set it to move time
	// without sleeping.
	Now func() time.Time
}

// MemoryStore is the in-process [Store], the default. Expired scopes are
// invisible at once and their memory is reclaimed by a sweep that runs
// during grants, at most once per minute of the store's clock.
type MemoryStore struct {
	now func() time.Time

	mu        sync.RWMutex
	scopes    map[string]*memScope
	nextSweep time.Time
}

type memScope struct {
	tools   map[string]string
	expires time.Time
}

// NewMemoryStore returns an empty in-process store. opts may be nil.
func NewMemoryStore(opts *MemoryOptions) *MemoryStore {
	s := &MemoryStore{now: time.Now, scopes: make(map[string]*memScope)}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	return s
}

// Grant implements [Store].
func (s *MemoryStore) Grant(_ context.Context, key string, tools map[string]string, ttl time.Duration) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.nextSweep) {
		for k, sc := range s.scopes {
			if now.After(sc.expires) {
				delete(s.scopes, k)
			}
		}
		s.nextSweep = now.Add(time.Minute)
	}
	sc, ok := s.scopes[key]
	if !ok || now.After(sc.expires) {
		sc = &memScope{tools: make(map[string]string, len(tools))}
		s.scopes[key] = sc
	}
	for name, v := range tools {
		sc.tools[name] = v
	}
	sc.expires = now.Add(ttl)
	return nil
}

// Lookup implements [Store].
func (s *MemoryStore) Lookup(_ context.Context, key, tool string) (string, bool, error) {
	s.mu.RLock()
	sc, ok := s.scopes[key]
	var v string
	var expires time.Time
	if ok {
		v, ok = sc.tools[tool]
		expires = sc.expires
	}
	s.mu.RUnlock()
	if !ok || s.now().After(expires) {
		return "", false, nil
	}
	return v, true, nil
}

// Forget implements [Store].
func (s *MemoryStore) Forget(_ context.Context, key string) error {
	s.mu.Lock()
	delete(s.scopes, key)
	s.mu.Unlock()
	return nil
}

// Len returns the number of scopes held, expired or not (for tests and
// monitoring).
func (s *MemoryStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.scopes)
}
