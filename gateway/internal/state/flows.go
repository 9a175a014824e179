package state

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// Flows remember, per scope (a principal, or a principal's legacy
// session), the fingerprints of values a client was shown and where each
// came from, so that a later call carrying one can be told. Fingerprints
// are keyed hashes; a store never holds a value. Entries expire after the
// ttl given when they were marked; a scope holds at most the max given,
// the oldest dropped first.
type Flows interface {
	// Tick counts a call in scope and returns its number, from 1; the
	// count lapses ttl after the scope's last call.
	Tick(ctx context.Context, scope string, ttl time.Duration) (int64, error)
	// Mark records fps as read from src, for ttl, keeping at most max
	// fingerprints in scope.
	Mark(ctx context.Context, scope string, fps []string, src FlowSource, ttl time.Duration, max int) error
	// Find returns the source of the first of fps that scope holds.
	Find(ctx context.Context, scope string, fps []string) (FlowSource, bool, error)
}

// FlowSource is where a value was read: the upstream (the gateway's name
// of it), its tool (exposed name) or URI, and the number of the call
// that read it ([Flows.Tick]).
type FlowSource struct {
	Upstream, Tool string
	Call           int64
}

// DefaultFlowCapacity bounds the fingerprints the in-process store holds
// for all scopes together unless [Options.FlowCapacity] says otherwise;
// the oldest are dropped first.
const DefaultFlowCapacity = 1 << 20

// memFlows are the in-process Flows: one list of every entry, oldest
// first, for the overall bound and expiry, and one per scope for its own
// bound.
type memFlows struct {
	clock *clock
	max   int

	mu     sync.Mutex
	all    list.List // of *flowEntry, oldest first
	scopes map[string]*flowScope
}

type flowScope struct {
	byFP    map[string]*flowEntry
	order   list.List // of *flowEntry, oldest first
	calls   int64
	callExp int64
}

type flowEntry struct {
	scope    string
	fp       string
	src      FlowSource
	exp      int64
	inAll    *list.Element
	inScope  *list.Element
	scopeRef *flowScope
}

func newMemFlows(capacity int, c *clock) *memFlows {
	return &memFlows{clock: c, max: capacity, scopes: map[string]*flowScope{}}
}

func (m *memFlows) Tick(_ context.Context, scope string, ttl time.Duration) (int64, error) {
	if err := checkFlowTTL(ttl); err != nil {
		return 0, err
	}
	now := m.clock.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	s := m.scope(scope, now)
	if s == nil {
		return 0, fmt.Errorf("%w: %d scopes with flows, the bound (Options.FlowCapacity)", ErrFull, m.max)
	}
	if s.callExp <= now {
		s.calls = 0
	}
	s.calls++
	s.callExp = now + ttlMillis(ttl)*1000
	return s.calls, nil
}

func (m *memFlows) Mark(_ context.Context, scope string, fps []string, src FlowSource, ttl time.Duration, max int) error {
	if err := checkFlowTTL(ttl); err != nil {
		return err
	}
	if max <= 0 {
		return invalid("flow max %d: want more than 0", max)
	}
	now := m.clock.now()
	exp := now + ttlMillis(ttl)*1000
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	s := m.scope(scope, now)
	if s == nil {
		return fmt.Errorf("%w: %d scopes with flows, the bound (Options.FlowCapacity)", ErrFull, m.max)
	}
	for _, fp := range fps {
		if e, ok := s.byFP[fp]; ok {
			e.src, e.exp = src, exp
			m.all.MoveToBack(e.inAll)
			s.order.MoveToBack(e.inScope)
			continue
		}
		for s.order.Len() >= max {
			m.drop(s.order.Front().Value.(*flowEntry))
		}
		for m.all.Len() >= m.max {
			m.drop(m.all.Front().Value.(*flowEntry))
		}
		e := &flowEntry{scope: scope, fp: fp, src: src, exp: exp, scopeRef: s}
		e.inAll = m.all.PushBack(e)
		e.inScope = s.order.PushBack(e)
		s.byFP[fp] = e
		if _, ok := m.scopes[scope]; !ok { // dropped above as it emptied
			m.scopes[scope] = s
		}
	}
	return nil
}

func (m *memFlows) Find(_ context.Context, scope string, fps []string) (FlowSource, bool, error) {
	now := m.clock.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[scope]
	if s == nil {
		return FlowSource{}, false, nil
	}
	for _, fp := range fps {
		if e, ok := s.byFP[fp]; ok && e.exp > now {
			return e.src, true, nil
		}
	}
	return FlowSource{}, false, nil
}

// scope returns scope's entry, made if need be; nil when there are as
// many scopes as the bound allows entries.
func (m *memFlows) scope(scope string, now int64) *flowScope {
	if s, ok := m.scopes[scope]; ok {
		return s
	}
	if len(m.scopes) >= m.max {
		for k, s := range m.scopes { // counters only: their calls lapsed
			if s.order.Len() == 0 && s.callExp <= now {
				delete(m.scopes, k)
			}
		}
		if len(m.scopes) >= m.max {
			return nil
		}
	}
	s := &flowScope{byFP: map[string]*flowEntry{}}
	m.scopes[scope] = s
	return s
}

// sweep drops the entries that expired at or before now. Entries are
// in the order they were marked, so the expired ones come first unless
// ttls differ, in which case Find still ignores them.
func (m *memFlows) sweep(now int64) {
	for f := m.all.Front(); f != nil && f.Value.(*flowEntry).exp <= now; f = m.all.Front() {
		m.drop(f.Value.(*flowEntry))
	}
}

func (m *memFlows) drop(e *flowEntry) {
	m.all.Remove(e.inAll)
	s := e.scopeRef
	s.order.Remove(e.inScope)
	delete(s.byFP, e.fp)
	if s.order.Len() == 0 && s.callExp <= m.clock.now() {
		delete(m.scopes, e.scope)
	}
}

// MaxFlowTTL bounds how long a fingerprint is remembered.
const MaxFlowTTL = 7 * 24 * time.Hour

func checkFlowTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxFlowTTL {
		return invalid("flow ttl %v: want more than 0 and at most %v", ttl, MaxFlowTTL)
	}
	return nil
}
