package state

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Limiter limits the rate of events per key (a principal, a principal and
// a tool), shared by every replica. Both implementations run the generic
// cell rate algorithm (GCRA, ITU-T I.371 and the ATM Forum's Traffic
// Management 4.0, in its virtual scheduling form): a key may have Burst
// events at once, then Rate a second, the same contract as a token bucket
// (golang.org/x/time/rate) with one timestamp of state per key instead of
// a token count and a time. A key whose bucket is full again is forgotten.
type Limiter interface {
	// Allow takes one event for key under limit. When the event exceeds
	// it, allowed is false and retryAfter says when one would be allowed.
	// A denied event is not counted. An error means nothing was decided
	// (the gateway refuses the call).
	Allow(ctx context.Context, key string, limit Limit) (allowed bool, retryAfter time.Duration, err error)
}

// Limit is a rate with a burst.
type Limit struct {
	// Rate is the events a second, sustained: more than 0, at most
	// 1,000,000.
	Rate float64
	// Burst is how many events may come at once, at least 1; Burst/Rate
	// (the time a bucket takes to fill) is at most 30 days.
	Burst int
}

// MaxKeyLen bounds a limiter key and a bus topic, in bytes.
const MaxKeyLen = 512

// DefaultLimiterKeys is how many keys with state the in-process limiter
// holds unless [Options.LimiterKeys] says otherwise. A key is forgotten
// when its bucket is full again, so this bounds the keys active within
// one fill time.
const DefaultLimiterKeys = 1 << 18

// maxFill is the longest Burst/Rate allowed, in microseconds.
const maxFill = int64(30 * 24 * time.Hour / time.Microsecond)

// interval returns the emission interval and the burst tolerance
// (burst × interval), in microseconds.
func (l Limit) interval() (int64, int64, error) {
	if !(l.Rate > 0 && l.Rate <= 1e6) || l.Burst < 1 { // !(x > 0) also refuses NaN
		return 0, 0, invalid("limit rate %v burst %d: want a rate in (0, 1e6] a second and a burst of at least 1", l.Rate, l.Burst)
	}
	iv := int64(math.Round(1e6 / l.Rate))
	if int64(l.Burst) > maxFill/iv {
		return 0, 0, invalid("limit rate %v burst %d: a bucket would take more than 30 days to fill", l.Rate, l.Burst)
	}
	return iv, iv * int64(l.Burst), nil
}

func checkKey(what, key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return invalid("%s of %d bytes: want 1 to %d", what, len(key), MaxKeyLen)
	}
	return nil
}

// gcra decides one event at now given the key's theoretical arrival time
// tat (0 when it has none), in microseconds. It returns the new tat when
// the event is allowed, else how long until it would be.
func gcra(now, tat, iv, tau int64) (newTAT, wait int64) {
	tat = max(tat, now)
	newTAT = tat + iv
	if allowAt := newTAT - tau; now < allowAt {
		return 0, allowAt - now
	}
	return newTAT, 0
}

// memLimiter is the in-process Limiter.
type memLimiter struct {
	clock *clock

	mu   sync.Mutex
	tats *expiring // key -> tat; a key expires when its bucket is full again
}

func newMemLimiter(keys int, c *clock) *memLimiter {
	return &memLimiter{clock: c, tats: newExpiring(keys)}
}

func (m *memLimiter) Allow(_ context.Context, key string, limit Limit) (bool, time.Duration, error) {
	if err := checkKey("limiter key", key); err != nil {
		return false, 0, err
	}
	iv, tau, err := limit.interval()
	if err != nil {
		return false, 0, err
	}
	now := m.clock.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tats.sweep(now)
	tat, _ := m.tats.get(key)
	newTAT, wait := gcra(now, tat, iv, tau)
	if wait > 0 {
		return false, time.Duration(wait) * time.Microsecond, nil
	}
	if !m.tats.set(key, newTAT) {
		return false, 0, fmt.Errorf("%w: %d rate-limited keys active, the bound (Options.LimiterKeys)", ErrFull, m.tats.max)
	}
	return true, 0, nil
}
