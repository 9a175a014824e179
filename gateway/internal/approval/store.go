package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors of the store and the service.
var (
	// ErrNotFound: no such request (unknown, forged, malformed, not the
	// caller's to see, or forgotten after it expired).
	ErrNotFound = errors.New("no such approval request")
	// ErrNotPending: the request was already decided or has expired.
	ErrNotPending = errors.New("approval request is no longer pending")
	// ErrNotApproved: the request is pending or was denied.
	ErrNotApproved = errors.New("approval request is not approved")
	// ErrUsed: the approval was used already; it allows one call.
	ErrUsed = errors.New("approval was already used")
	// ErrExpired: the request or its approval lapsed.
	ErrExpired = errors.New("approval request expired")
	// ErrMismatch: the request is for another principal, server, tool
	// or arguments than the call presenting it.
	ErrMismatch = errors.New("approval request is for another call")
	// ErrForbidden: the approver may not decide another principal's
	// request.
	ErrForbidden = errors.New("approver may not decide another principal's request")
	// ErrFull: too many requests are open.
	ErrFull = errors.New("too many approval requests are open")
)

// Decision is a person's decision on a pending request.
type Decision struct {
	// Approve approves; false denies.
	Approve bool
	By      Approver
	At      time.Time
	// UseBy is when an approval lapses if unused; ignored for a denial
	// (a denied request keeps its expiry and answers retries until then).
	UseBy time.Time
}

// ListFilter selects requests for the page.
type ListFilter struct {
	// Principal, unless All, selects one principal's requests.
	Principal string
	All       bool
	// Limit, if positive, is the most requests returned.
	Limit int
}

// Store keeps requests. Every method is safe for concurrent use and atomic:
// with replicas sharing a store, a request is decided once and an approval
// used once whatever replica asks. Methods return copies. Times are passed
// in so that every implementation judges expiry alike.
type Store interface {
	// Open returns the open request (pending, approved or denied, not
	// expired at now) for r's key, or, if there is none, stores r (a new
	// pending request) and returns it with created true. It fails with
	// ErrFull when the store holds too many requests.
	Open(ctx context.Context, r *Request, now time.Time) (got *Request, created bool, err error)
	// Get returns request id with its state at now, or ErrNotFound.
	Get(ctx context.Context, id string, now time.Time) (*Request, error)
	// Decide records d on request id if it is pending at d.At and
	// returns the request; otherwise it returns the request as it stands
	// with ErrNotPending (or ErrNotFound).
	Decide(ctx context.Context, id string, d Decision) (*Request, error)
	// Consume marks approved request id used at now and returns it;
	// otherwise ErrUsed, ErrExpired, ErrNotApproved or ErrNotFound, with
	// the request as it stands when there is one.
	Consume(ctx context.Context, id string, now time.Time) (*Request, error)
	// List returns the requests f selects with their state at now, newest
	// first.
	List(ctx context.Context, f ListFilter, now time.Time) ([]*Request, error)
}

// MemOptions bound a MemStore; nil means the defaults.
type MemOptions struct {
	// MaxRequests bounds the requests kept, decided ones included. Zero
	// means 4096.
	MaxRequests int
	// MaxOpen bounds the open requests of one principal. Zero means 64.
	MaxOpen int
	// Retain is how long a request is kept after it expired or was used
	// or denied, for the page's history. Zero means one hour.
	Retain time.Duration
}

// MemStore is the in-process Store: bounded, forgetting requests Retain
// after they lapsed. It serves one replica (or tests of several that
// share it).
type MemStore struct {
	opts MemOptions
	mu   sync.Mutex
	byID map[string]*Request
	// byKey indexes the open requests by key, and open by principal;
	// both are pruned of lapsed requests as they are read.
	byKey map[Key][]string
	open  map[string]map[string]struct{}
}

// NewMemStore returns an empty in-process store.
func NewMemStore(o *MemOptions) *MemStore {
	var opts MemOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = 4096
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = 64
	}
	if opts.Retain <= 0 {
		opts.Retain = time.Hour
	}
	return &MemStore{opts: opts, byID: map[string]*Request{}, byKey: map[Key][]string{}, open: map[string]map[string]struct{}{}}
}

// Open implements Store.
func (m *MemStore) Open(_ context.Context, r *Request, now time.Time) (*Request, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if got := m.openFor(r.Key, now); got != nil {
		return got.Clone(), false, nil
	}
	if _, dup := m.byID[r.ID]; dup || !ValidID(r.ID) {
		return nil, false, errors.New("approval: request id is not fresh")
	}
	if m.openCount(r.Principal, now) >= m.opts.MaxOpen {
		return nil, false, ErrFull
	}
	if len(m.byID) >= m.opts.MaxRequests {
		m.sweep(now)
	}
	if len(m.byID) >= m.opts.MaxRequests && !m.evictOne(now) {
		return nil, false, ErrFull
	}
	c := r.Clone()
	c.State = Pending
	m.byID[c.ID] = c
	m.byKey[c.Key] = append(m.byKey[c.Key], c.ID)
	if m.open[c.Principal] == nil {
		m.open[c.Principal] = map[string]struct{}{}
	}
	m.open[c.Principal][c.ID] = struct{}{}
	return c.Clone(), true, nil
}

// openFor returns the newest open request for k at now, pruning the
// index of the others.
func (m *MemStore) openFor(k Key, now time.Time) *Request {
	ids := m.byKey[k]
	var newest *Request
	kept := ids[:0]
	for _, id := range ids {
		r := m.byID[id]
		if r == nil || !isOpen(r, now) {
			continue
		}
		kept = append(kept, id)
		if newest == nil || r.Created.After(newest.Created) {
			newest = r
		}
	}
	if len(kept) == 0 {
		delete(m.byKey, k)
	} else {
		m.byKey[k] = kept
	}
	return newest
}

// isOpen reports whether r still decides its key's calls at now.
func isOpen(r *Request, now time.Time) bool { return r.At(now).Open() && now.Before(r.Expires) }

// openCount counts principal's open requests at now.
func (m *MemStore) openCount(principal string, now time.Time) int {
	ids := m.open[principal]
	for id := range ids {
		if r := m.byID[id]; r == nil || !isOpen(r, now) {
			delete(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(m.open, principal)
	}
	return len(ids)
}

// lapsed is when r stopped mattering: its expiry, or when it was used.
func lapsed(r *Request) time.Time {
	if r.State == Used {
		return r.UsedAt
	}
	return r.Expires
}

// sweep forgets the requests that lapsed more than Retain ago.
func (m *MemStore) sweep(now time.Time) {
	for id, r := range m.byID {
		if now.Sub(lapsed(r)) > m.opts.Retain {
			m.forget(id)
		}
	}
}

// evictOne forgets the request that lapsed first, if any has; it never
// forgets an open one.
func (m *MemStore) evictOne(now time.Time) bool {
	var oldest *Request
	for _, r := range m.byID {
		if isOpen(r, now) {
			continue
		}
		if oldest == nil || lapsed(r).Before(lapsed(oldest)) {
			oldest = r
		}
	}
	if oldest == nil {
		return false
	}
	m.forget(oldest.ID)
	return true
}

func (m *MemStore) forget(id string) {
	r := m.byID[id]
	if r == nil {
		return
	}
	delete(m.byID, id)
	m.closed(r)
}

// closed drops r from the indexes of open requests.
func (m *MemStore) closed(r *Request) {
	if ids := slices.DeleteFunc(m.byKey[r.Key], func(s string) bool { return s == r.ID }); len(ids) == 0 {
		delete(m.byKey, r.Key)
	} else {
		m.byKey[r.Key] = ids
	}
	if ids := m.open[r.Principal]; ids != nil {
		delete(ids, r.ID)
		if len(ids) == 0 {
			delete(m.open, r.Principal)
		}
	}
}

// snapshot returns a copy of r with its state at now.
func snapshot(r *Request, now time.Time) *Request {
	c := r.Clone()
	c.State = r.At(now)
	return c
}

// Get implements Store.
func (m *MemStore) Get(_ context.Context, id string, now time.Time) (*Request, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byID[id]
	if r == nil {
		return nil, ErrNotFound
	}
	return snapshot(r, now), nil
}

// Decide implements Store.
func (m *MemStore) Decide(_ context.Context, id string, d Decision) (*Request, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byID[id]
	if r == nil {
		return nil, ErrNotFound
	}
	if r.At(d.At) != Pending {
		return snapshot(r, d.At), ErrNotPending
	}
	r.DecidedBy, r.Decided = d.By, d.At
	if d.Approve {
		r.State, r.Expires = Approved, d.UseBy
	} else {
		r.State = Denied
	}
	return snapshot(r, d.At), nil
}

// Consume implements Store.
func (m *MemStore) Consume(_ context.Context, id string, now time.Time) (*Request, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byID[id]
	if r == nil {
		return nil, ErrNotFound
	}
	switch r.At(now) {
	case Approved:
		r.State, r.UsedAt = Used, now
		m.closed(r)
		return snapshot(r, now), nil
	case Used:
		return snapshot(r, now), ErrUsed
	case Expired:
		return snapshot(r, now), ErrExpired
	}
	return snapshot(r, now), ErrNotApproved
}

// List implements Store.
func (m *MemStore) List(_ context.Context, f ListFilter, now time.Time) ([]*Request, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Request
	for _, r := range m.byID {
		if f.All || r.Principal == f.Principal {
			out = append(out, snapshot(r, now))
		}
	}
	slices.SortFunc(out, func(a, b *Request) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
