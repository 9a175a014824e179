package config

// Limits on the retry section.
const (
	MaxRetryAttempts = 10
	MaxRetryBudget   = 100000
)

// Retry bounds the gateway's retries of calls after a transient upstream
// failure (docs/metrics.md): only calls that never reached the upstream or
// that are idempotent by their resolution are retried. Fields left out take
// the gateway's defaults (3 attempts, back-off 100ms to 2s, within 30s, a
// budget of 10 per upstream refilled by one every 1s).
type Retry struct {
	// Attempts bounds the times one call is forwarded, the first included;
	// 1 turns retries off.
	Attempts int `json:"attempts,omitempty"`
	// Backoff and MaxBackoff bound the wait between attempts.
	Backoff    Duration `json:"backoff,omitempty"`
	MaxBackoff Duration `json:"maxBackoff,omitempty"`
	// Within is how long after a call began a retry may still start.
	Within Duration `json:"within,omitempty"`
	// Budget is each upstream's bucket of retries; one comes back every
	// Refill.
	Budget int      `json:"budget,omitempty"`
	Refill Duration `json:"refill,omitempty"`
}

// Metrics configures the Prometheus metrics at /metrics.
type Metrics struct {
	// Enabled serves them; nil means true.
	Enabled *bool `json:"enabled,omitempty"`
}

// retry checks the retry section.
func (p *parser) retry(r *Retry) {
	if p.dec.set("retry.attempts") && (r.Attempts < 1 || r.Attempts > MaxRetryAttempts) {
		p.fail("retry.attempts", "%d attempts: want 1 (no retries) to %d", r.Attempts, MaxRetryAttempts)
	}
	if p.dec.set("retry.budget") && (r.Budget < 1 || r.Budget > MaxRetryBudget) {
		p.fail("retry.budget", "%d retries: want 1 to %d", r.Budget, MaxRetryBudget)
	}
	if r.Backoff != 0 && r.MaxBackoff != 0 && r.MaxBackoff < r.Backoff {
		p.fail("retry.maxBackoff", "%s is less than retry.backoff (%s)", r.MaxBackoff, r.Backoff)
	}
}
