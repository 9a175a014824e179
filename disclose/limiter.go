package disclose

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimiters bounds the per-scope rate limiters kept in memory.
const maxLimiters = 10000

// limiterCache holds one rate limiter per scope key, at most max of them,
// most recently used first. A limiter whose bucket has refilled is the
// same as a new one, so it is dropped as soon as it reaches the back of
// the list; when the cache is full of busy limiters, the least recently
// used one goes. Either way a new key always gets a limiter that is kept,
// so a flood of new keys cannot switch limiting off, and a key in use
// stays at the front where the flood does not reach it.
type limiterCache struct {
	rate  rate.Limit
	burst int
	max   int

	mu    sync.Mutex
	order *list.List               // of *limiterEntry, most recent first
	byKey map[string]*list.Element // key -> element of order
}

type limiterEntry struct {
	key string
	l   *rate.Limiter
}

func newLimiterCache(r rate.Limit, burst, max int) *limiterCache {
	return &limiterCache{rate: r, burst: burst, max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// allow takes one token from key's limiter at now; if none is left it
// says how long until one is.
func (c *limiterCache) allow(key string, now time.Time) (time.Duration, bool) {
	if c.rate == rate.Inf {
		return 0, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.get(key, now)
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// get returns key's limiter, making it the most recent; c.mu is held.
func (c *limiterCache) get(key string, now time.Time) *rate.Limiter {
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*limiterEntry).l
	}
	for e := c.order.Back(); e != nil; e = c.order.Back() {
		old := e.Value.(*limiterEntry)
		if len(c.byKey) < c.max && old.l.TokensAt(now) < float64(c.burst) {
			break
		}
		c.order.Remove(e)
		delete(c.byKey, old.key)
	}
	l := rate.NewLimiter(c.rate, c.burst)
	c.byKey[key] = c.order.PushFront(&limiterEntry{key: key, l: l})
	return l
}

// len returns how many limiters are kept.
func (c *limiterCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}
