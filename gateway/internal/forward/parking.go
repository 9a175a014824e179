package forward

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Parked is a legacy upstream's call waiting for a 2026-07-28 client's
// answers.
type Parked struct {
	Exchange upstream.Exchange
	Relay    *relay
	Upstream string
	// Principal is the user the call is for: each principal has a share
	// of the parking.
	Principal string
}

// Parking holds parked calls between a client's requests. It is the one
// piece of gateway state that spans requests of a 2026-07-28 client; a call
// is parked in the process that runs it, so a retry must reach the same
// process (a load balancer in front of replicas needs affinity for such
// calls; calls to 2026-07-28 upstreams need none, their state travels in
// the sealed requestState).
type Parking interface {
	// Park stores p and returns its id (unguessable).
	Park(p *Parked) (string, error)
	// Take removes and returns the call parked under id.
	Take(id string) (*Parked, bool)
	// Close ends every parked call.
	Close()
}

// Defaults of a MemoryParking.
const (
	DefaultParkedTTL = 5 * time.Minute
	DefaultMaxParked = 1024
	// DefaultMaxParkedPerPrincipal bounds one principal's parked calls,
	// so that no principal fills the parking for the others.
	DefaultMaxParkedPerPrincipal = 256
)

// MemoryParkingOptions configure [NewMemoryParking]. Nil means defaults.
type MemoryParkingOptions struct {
	// TTL is how long a call waits for its answers; then it is ended.
	// Zero means DefaultParkedTTL.
	TTL time.Duration
	// Max bounds the calls parked at once; Park fails beyond it. Zero
	// means DefaultMaxParked.
	Max int
	// MaxPerPrincipal bounds one principal's. Zero means
	// DefaultMaxParkedPerPrincipal (or Max, when that is smaller).
	MaxPerPrincipal int
}

// MemoryParking is the in-process [Parking].
type MemoryParking struct {
	ttl          time.Duration
	max, maxEach int
	mu           sync.Mutex
	calls        map[string]*parkedEntry
	byPrincipal  map[string]int
	closed       bool
}

type parkedEntry struct {
	p     *Parked
	timer *time.Timer
}

// NewMemoryParking returns an empty in-process parking.
func NewMemoryParking(opts *MemoryParkingOptions) *MemoryParking {
	m := &MemoryParking{ttl: DefaultParkedTTL, max: DefaultMaxParked, maxEach: DefaultMaxParkedPerPrincipal,
		calls: map[string]*parkedEntry{}, byPrincipal: map[string]int{}}
	if opts != nil && opts.TTL > 0 {
		m.ttl = opts.TTL
	}
	if opts != nil && opts.Max > 0 {
		m.max = opts.Max
	}
	if opts != nil && opts.MaxPerPrincipal > 0 {
		m.maxEach = opts.MaxPerPrincipal
	}
	m.maxEach = min(m.maxEach, m.max)
	return m
}

// ErrParkingFull is returned when too many calls are parked.
var ErrParkingFull = errors.New("too many calls are waiting for answers")

// Park implements [Parking].
func (m *MemoryParking) Park(p *Parked) (string, error) {
	id := rand.Text()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errors.New("the gateway is shutting down")
	}
	if len(m.calls) >= m.max {
		return "", fmt.Errorf("%w (%d)", ErrParkingFull, m.max)
	}
	if m.byPrincipal[p.Principal] >= m.maxEach {
		return "", fmt.Errorf("%w for this user (%d): answer or abandon some first", ErrParkingFull, m.maxEach)
	}
	m.byPrincipal[p.Principal]++
	e := &parkedEntry{p: p}
	e.timer = time.AfterFunc(m.ttl, func() {
		if p, ok := m.Take(id); ok {
			p.Exchange.Close()
		}
	})
	m.calls[id] = e
	return id, nil
}

// Take implements [Parking].
func (m *MemoryParking) Take(id string) (*Parked, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.calls[id]
	if !ok {
		return nil, false
	}
	delete(m.calls, id)
	if m.byPrincipal[e.p.Principal]--; m.byPrincipal[e.p.Principal] <= 0 {
		delete(m.byPrincipal, e.p.Principal)
	}
	e.timer.Stop()
	return e.p, true
}

// Len returns the number of parked calls.
func (m *MemoryParking) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// Close implements [Parking].
func (m *MemoryParking) Close() {
	m.mu.Lock()
	calls := m.calls
	m.calls = map[string]*parkedEntry{}
	m.byPrincipal = map[string]int{}
	m.closed = true
	m.mu.Unlock()
	for _, e := range calls {
		e.timer.Stop()
		e.p.Exchange.Close()
	}
}
