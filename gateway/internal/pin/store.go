package pin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// State is where a pinned tool stands.
type State string

// The states of a pinned tool.
const (
	// StatePinned: the upstream serves the pinned definition.
	StatePinned State = "pinned"
	// StateChanged: the upstream serves another definition, which is
	// listed and callable (warn mode) until someone approves it.
	StateChanged State = "changed"
	// StateQuarantined: the upstream serves another definition; the tool
	// is listed as quarantined and calls are refused until someone
	// approves it.
	StateQuarantined State = "quarantined"
)

// Record is what a store holds of one tool of one upstream.
type Record struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Pinned is the definition first seen or last approved, and
	// PinnedAt when. For a tool first seen after its server's first
	// listing in strict mode, it is [NewToolPin]: nothing of the tool is
	// approved until someone approves Pending.
	Pinned   *Definition `json:"pinned"`
	PinnedAt time.Time   `json:"pinnedAt"`
	// ApprovedBy is who approved Pinned: "" when it was pinned at first
	// sight, AutoApprover when it was accepted as only adding caution.
	ApprovedBy string `json:"approvedBy,omitempty"`
	State      State  `json:"state"`
	// Pending is the changed definition the upstream serves now, awaiting
	// approval, and PendingSince when it was first seen; nil in
	// StatePinned.
	Pending      *Definition `json:"pending,omitempty"`
	PendingSince time.Time   `json:"pendingSince,omitzero"`
}

// AutoApprover approves the changes a Pinner accepts by itself: those that
// only add caution, in warn mode.
const AutoApprover = "preflight: adds caution only"

// Errors of a store.
var (
	// ErrNotFound: the store holds no record of the tool.
	ErrNotFound = errors.New("pin: no such pinned tool")
	// ErrNothingPending: the tool serves its pinned definition; there is
	// nothing to approve.
	ErrNothingPending = errors.New("pin: nothing to approve: the tool serves its pinned definition")
	// ErrStale: the fingerprint given is not the one awaiting approval
	// (the definition changed again since it was reviewed).
	ErrStale = errors.New("pin: the fingerprint is not the one awaiting approval")
	// ErrConflict: the pinned definition is not the one the caller
	// compared with; Quarantine returns the store's record with it.
	ErrConflict = errors.New("pin: the pinned definition changed meanwhile")
)

// Store keeps pins. Implementations are safe for concurrent use, by one
// process or, for a shared store, by several; every method is atomic.
// Records returned are the caller's to keep and must not be modified.
type Store interface {
	// Get returns the record of server's tool, or ErrNotFound.
	Get(ctx context.Context, server, tool string) (*Record, error)
	// List returns the records of server, or of every server when server
	// is "", ordered by server and tool.
	List(ctx context.Context, server string) ([]*Record, error)
	// Pin records def as the pinned definition of server's tool def.Name
	// if the store holds none, and returns the record the store holds.
	Pin(ctx context.Context, server string, def *Definition, at time.Time) (*Record, error)
	// Quarantine records pending as the definition server's tool serves
	// now, in state (StateChanged or StateQuarantined); PendingSince is
	// kept when pending is the one already recorded. StatePinned with a
	// nil pending releases the tool: it serves its pinned definition
	// again. pinned is the fingerprint of the pinned definition the
	// caller compared with: when the store's differs (another replica
	// approved a change meanwhile), nothing is written and the store's
	// record is returned with ErrConflict. It returns the record, or
	// ErrNotFound.
	Quarantine(ctx context.Context, server, tool, pinned string, state State, pending *Definition, at time.Time) (*Record, error)
	// Approve makes the pending definition whose fingerprint is
	// fingerprint the pinned one, approved by approver, and returns the
	// record. It fails with ErrNotFound, with ErrNothingPending when
	// nothing is pending (unless fingerprint is already the pinned one,
	// which succeeds: approving twice is harmless) and with ErrStale when
	// another definition is pending.
	Approve(ctx context.Context, server, tool, fingerprint, approver string, at time.Time) (*Record, error)
	// Listed records that server's tools were listed at at, unless a
	// listing of it was recorded before, and reports whether this one is
	// the first: tools first seen later are new (quarantined in strict
	// mode), whatever the process that sees them.
	Listed(ctx context.Context, server string, at time.Time) (first bool, err error)
}

// ApplyQuarantine is Store.Quarantine applied to a copy of r: the rule
// every store follows.
func ApplyQuarantine(r *Record, pinned string, state State, pending *Definition, at time.Time) (*Record, error) {
	out := *r
	switch {
	case r.Pinned.Fingerprint() != pinned:
		return r, ErrConflict
	case state == StatePinned && pending == nil:
		out.State, out.Pending, out.PendingSince = StatePinned, nil, time.Time{}
	case pending != nil && pending.Fingerprint() == pinned:
		return nil, errors.New("pin: the pending definition is the pinned one")
	case (state == StateChanged || state == StateQuarantined) && pending != nil:
		if r.Pending == nil || r.Pending.Fingerprint() != pending.Fingerprint() {
			out.PendingSince = at.UTC()
		}
		out.State, out.Pending = state, pending
	default:
		return nil, fmt.Errorf("pin: quarantine in state %q with pending %v: want changed or quarantined with a definition, or pinned without", state, pending != nil)
	}
	return &out, nil
}

// ApplyApprove is Store.Approve applied to a copy of r: the rule every
// store follows.
func ApplyApprove(r *Record, fingerprint, approver string, at time.Time) (*Record, error) {
	switch {
	case r.Pending == nil && r.Pinned.Fingerprint() == fingerprint:
		return r, nil
	case r.Pending == nil:
		return nil, ErrNothingPending
	case r.Pending.Fingerprint() != fingerprint:
		return nil, fmt.Errorf("%w: %s is pending", ErrStale, r.Pending.Fingerprint())
	}
	out := *r
	out.Pinned, out.PinnedAt, out.ApprovedBy = r.Pending, at.UTC(), approver
	out.State, out.Pending, out.PendingSince = StatePinned, nil, time.Time{}
	return &out, nil
}

// MemoryStore is a Store in this process's memory: pins last as long as
// the process. Its zero value is not ready; use [NewMemoryStore].
type MemoryStore struct {
	mu     sync.RWMutex
	recs   map[string]map[string]*Record // by server, then tool
	listed map[string]time.Time          // first listing of each server
	n      int
	max    int
}

// NewMemoryStore returns an empty store that holds at most max records
// (0 means 100000); a Pin beyond it fails.
func NewMemoryStore(max int) *MemoryStore {
	if max <= 0 {
		max = 100_000
	}
	return &MemoryStore{recs: map[string]map[string]*Record{}, listed: map[string]time.Time{}, max: max}
}

// Listed implements Store.
func (s *MemoryStore) Listed(_ context.Context, server string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.listed[server]; ok {
		return false, nil
	}
	if len(s.listed) >= s.max {
		return false, fmt.Errorf("pin: the memory store holds %d servers, its limit", s.max)
	}
	s.listed[server] = at.UTC()
	return true, nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, server, tool string) (*Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.recs[server][tool]
	if !ok {
		return nil, ErrNotFound
	}
	return r, nil
}

// List implements Store.
func (s *MemoryStore) List(_ context.Context, server string) ([]*Record, error) {
	s.mu.RLock()
	var out []*Record
	if server != "" {
		out = make([]*Record, 0, len(s.recs[server]))
		for _, r := range s.recs[server] {
			out = append(out, r)
		}
	} else {
		out = make([]*Record, 0, s.n)
		for _, tools := range s.recs {
			for _, r := range tools {
				out = append(out, r)
			}
		}
	}
	s.mu.RUnlock()
	SortRecords(out)
	return out, nil
}

// SortRecords orders records by server, then tool.
func SortRecords(rs []*Record) {
	slices.SortFunc(rs, func(a, b *Record) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool))
	})
}

// Pin implements Store.
func (s *MemoryStore) Pin(_ context.Context, server string, def *Definition, at time.Time) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[server][def.Name]; ok {
		return r, nil
	}
	if s.n >= s.max {
		return nil, fmt.Errorf("pin: the memory store holds %d records, its limit", s.max)
	}
	r := &Record{Server: server, Tool: def.Name, Pinned: def, PinnedAt: at.UTC(), State: StatePinned}
	if s.recs[server] == nil {
		s.recs[server] = map[string]*Record{}
	}
	s.recs[server][def.Name] = r
	s.n++
	return r, nil
}

// Quarantine implements Store.
func (s *MemoryStore) Quarantine(_ context.Context, server, tool, pinned string, state State, pending *Definition, at time.Time) (*Record, error) {
	return s.update(server, tool, func(r *Record) (*Record, error) { return ApplyQuarantine(r, pinned, state, pending, at) })
}

// Approve implements Store.
func (s *MemoryStore) Approve(_ context.Context, server, tool, fingerprint, approver string, at time.Time) (*Record, error) {
	return s.update(server, tool, func(r *Record) (*Record, error) { return ApplyApprove(r, fingerprint, approver, at) })
}

func (s *MemoryStore) update(server, tool string, f func(*Record) (*Record, error)) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[server][tool]
	if !ok {
		return nil, ErrNotFound
	}
	out, err := f(r)
	if err != nil {
		return out, err // the current record with ErrConflict
	}
	s.recs[server][tool] = out
	return out, nil
}
