package gateway

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// How the health report checks the stores: each ping is bounded, and the
// answers are kept a while, so that /healthz stays cheap and cannot be
// used to hammer the stores.
const (
	storePingTimeout = time.Second
	storeHealthTTL   = 5 * time.Second
)

// StoreCheck names a store the gateway uses, for the health report and
// the start-up output.
type StoreCheck struct {
	// Keeps says what the store keeps: "approvals", "audit", "pins",
	// "vault", "disclosure", "page sessions". The gateway adds "state"
	// (Options.State) itself.
	Keeps string
	// At says where, without credentials: "memory", "sqlite PATH",
	// "postgres at HOST:PORT", "redis at HOST:PORT".
	At string
	// Ping reports whether the store answers, within ctx. Nil means a
	// store in this process, which always does.
	Ping func(context.Context) error
	// FailsClosed says what the gateway refuses while the store does not
	// answer; the report repeats it then.
	FailsClosed string
}

// StoreHealth is a store's line of the [Health] report.
type StoreHealth struct {
	Keeps string `json:"keeps"`
	At    string `json:"at"`
	// Up is false when the store did not answer its last ping; Error
	// says why, and what fails closed meanwhile.
	Up          bool   `json:"up"`
	Error       string `json:"error,omitempty"`
	FailsClosed string `json:"failsClosed,omitempty"`
}

// storeProbe pings the stores for the health report, at most once per
// storeHealthTTL.
type storeProbe struct {
	checks []StoreCheck

	mu   sync.Mutex // held while pinging: callers meanwhile wait for its answers
	at   time.Time
	last []StoreHealth
}

// health returns each store's answer to its latest ping, pinging them
// (all at once, each within storePingTimeout) when that is older than
// storeHealthTTL.
func (p *storeProbe) health() []StoreHealth {
	if len(p.checks) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != nil && time.Since(p.at) < storeHealthTTL {
		return slices.Clone(p.last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storePingTimeout)
	defer cancel()
	out := make([]StoreHealth, len(p.checks))
	var wg sync.WaitGroup
	for i, c := range p.checks {
		out[i] = StoreHealth{Keeps: c.Keeps, At: c.At, Up: true}
		if c.Ping == nil {
			continue
		}
		wg.Go(func() {
			if err := c.Ping(ctx); err != nil {
				out[i].Up = false
				out[i].Error = text.Clip(text.OneLine(err.Error()), 300)
				out[i].FailsClosed = c.FailsClosed
			}
		})
	}
	wg.Wait()
	p.at, p.last = time.Now(), out
	return slices.Clone(out)
}
