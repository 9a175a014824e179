package forward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Defaults of [RetryPolicy].
const (
	DefaultRetryAttempts = 3
	DefaultRetryInitial  = 100 * time.Millisecond
	DefaultRetryMax      = 2 * time.Second
	DefaultRetryWithin   = 30 * time.Second
	DefaultRetryBudget   = 10
	DefaultRetryRefill   = time.Second
)

// RetryPolicy bounds the retries of transient upstream failures. Zero
// fields take the defaults above: three attempts, a back-off from 100 ms
// doubling up to 2 s with jitter, no retry later than 30 s after the call
// began, and a budget of 10 retries per upstream that refills by one a
// second.
type RetryPolicy struct {
	// Attempts bounds the times one call is forwarded, the first included;
	// 1 turns retries off (failures are still reported as below).
	Attempts int
	// Initial and Max bound the back-off: the n-th retry waits between
	// half and all of min(Max, Initial·2ⁿ⁻¹), at random.
	Initial, Max time.Duration
	// Within bounds how long after the call began a retry may still start
	// (waiting for a restarting upstream included); the call's own
	// deadline, if sooner, wins.
	Within time.Duration
	// Budget is each upstream's token bucket of retries, shared by all its
	// calls, so that an upstream that keeps failing is not hammered: a
	// retry takes a token, and a token comes back every Refill, up to
	// Budget.
	Budget int
	Refill time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultRetryAttempts
	}
	if p.Initial <= 0 {
		p.Initial = DefaultRetryInitial
	}
	if p.Max <= 0 {
		p.Max = DefaultRetryMax
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	if p.Within <= 0 {
		p.Within = DefaultRetryWithin
	}
	if p.Budget <= 0 {
		p.Budget = DefaultRetryBudget
	}
	if p.Refill <= 0 {
		p.Refill = DefaultRetryRefill
	}
	return p
}

// RetryObserver hears what the retry stage does, for metrics.
type RetryObserver interface {
	// Retried: a call of server is forwarded again after a failure of
	// kind (an upstream.Fail constant).
	Retried(server, kind string)
	// GaveUp: a transient failure of a call of server ends the call,
	// for reason (one of the Retry* reasons).
	GaveUp(server, reason string)
}

// Reasons a transient failure is not retried.
const (
	RetryNotIdempotent = "not_idempotent" // the resolved call is not idempotent
	RetryNotResolved   = "not_resolved"   // the call was not resolved: static hints are not trusted
	RetryAttempts      = "attempts"       // the attempts are spent
	RetryBudget        = "budget"         // the upstream's retry budget is spent
	RetryDeadline      = "deadline"       // no time is left, or the upstream did not come back in time
)

// The retry of [Send] sends a call again after a transient upstream
// failure ([upstream.TransientError]) when that is safe: when the request
// never reached the upstream, or when this call is idempotent by its
// resolution (resolved by the upstream, a rule or an override, never the
// static declaration, which describes the tool's worst case rather than
// this call; see [Idempotent]). Retries back off with jitter, stop at the
// policy's attempts and time, and take a token of the upstream's retry
// budget. A retry after a lost connection or a dead stdio process waits
// for the upstream to reconnect (package upstream restarts it with its own
// back-off).
//
// A transient failure that is not retried ends the call with a JSON-RPC
// error (-32603) that says what happened, whether the outcome is unknown
// (the request was sent) and why it was not retried, with data
// {"outcome", "retried", "attempts", "reason"}; Outcome is "unknown" when
// the request was sent, "error" when it was not. c.Attempts counts the
// times the call was sent. Notifications relayed to the client by a
// failed attempt stay with the client; the result is only ever the final
// attempt's.
func newRetrier(policy *RetryPolicy, obs RetryObserver) *retrier {
	var p RetryPolicy
	if policy != nil {
		p = *policy
	}
	return &retrier{p: p.withDefaults(), obs: obs, buckets: map[string]*bucket{}}
}

type retrier struct {
	p   RetryPolicy
	obs RetryObserver

	mu      sync.Mutex
	buckets map[string]*bucket // by upstream name (bounded by the configuration)
}

func (r *retrier) serve(ctx context.Context, c *call.Call, send func(context.Context, *call.Call) (json.RawMessage, error)) (json.RawMessage, error) {
	deadline := time.Now().Add(r.p.Within)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for attempt := 1; ; attempt++ {
		c.Attempts = attempt
		c.Outcome = ""
		res, err := send(ctx, c)
		var te *upstream.TransientError
		if err == nil || !errors.As(err, &te) {
			return res, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		server := te.Upstream
		reason := ""
		if te.Sent {
			reason = whyNotRetry(c)
		}
		if reason == "" && attempt >= r.p.Attempts {
			reason = RetryAttempts
		}
		if reason == "" && time.Now().After(deadline) {
			reason = RetryDeadline
		}
		if reason == "" && !r.bucket(server).take() {
			reason = RetryBudget
		}
		if reason == "" {
			if r.obs != nil {
				r.obs.Retried(server, te.Kind)
			}
			if err := r.wait(ctx, deadline, attempt, c, te); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				reason = RetryDeadline
			}
		}
		if reason != "" {
			if r.obs != nil {
				r.obs.GaveUp(server, reason)
			}
			return nil, giveUp(c, te, reason, attempt)
		}
	}
}

// wait backs off before the next attempt, then waits for the upstream to
// be able to take it, both before the deadline.
// When the call is traced, the wait is a span named retry.
func (r *retrier) wait(ctx context.Context, deadline time.Time, attempt int, c *call.Call, te *upstream.TransientError) (err error) {
	if tracing.Recording(ctx) {
		var span trace.Span
		ctx, span = tracing.Start(ctx, "retry", trace.SpanKindInternal,
			tracing.Server.String(te.Upstream), tracing.Attempt.Int(attempt), tracing.Failure.String(te.Kind))
		defer func() {
			tracing.Fail(span, err)
			span.End()
		}()
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d := min(r.p.Max, r.p.Initial<<min(attempt-1, 20))
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.Upstream == nil {
		return nil
	}
	return c.Upstream.Recover(ctx, te)
}

// whyNotRetry returns why a call whose request may have reached the
// upstream must not be sent again, "" if it may.
func whyNotRetry(c *call.Call) string {
	if c.Method != call.ToolsCall || c.Resolution == nil || c.Resolution.Source == "" || c.Resolution.Source == "static" {
		return RetryNotResolved
	}
	if !Idempotent(c.Resolution) {
		return RetryNotIdempotent
	}
	return ""
}

// Idempotent reports whether a resolved call may be repeated without a
// further effect, by package policy's reading of its resolution: read-only,
// or idempotent by its effective idempotent hint.
func Idempotent(r *call.Resolution) bool {
	return r.Effective().SafeToRetry()
}

// giveUp is the client's error for a transient failure that ends a call.
func giveUp(c *call.Call, te *upstream.TransientError, reason string, attempts int) error {
	var why string
	switch reason {
	case RetryNotResolved:
		why = "it was not retried because this call was not resolved, and a tool's static idempotentHint describes the tool, not this call"
	case RetryNotIdempotent:
		why = "it was not retried because this call is not idempotent"
		if e := effectOf(c.Resolution); e != "" {
			why += " (effect: " + e + ")"
		}
	case RetryAttempts:
		why = fmt.Sprintf("it was tried %d times, the limit", attempts)
	case RetryBudget:
		why = fmt.Sprintf("it was not retried because the retry budget of upstream %q is spent (too many retries lately)", te.Upstream)
	case RetryDeadline:
		why = "it was not retried because no time was left (the upstream did not come back in time)"
	}
	state := "the request never reached the upstream, so nothing happened"
	c.Outcome = "error"
	if te.Sent {
		state = "the outcome is unknown: the call may or may not have taken effect"
		c.Outcome = "unknown"
	}
	data, _ := json.Marshal(struct {
		Outcome  string `json:"outcome"`
		Retried  bool   `json:"retried"`
		Attempts int    `json:"attempts"`
		Reason   string `json:"reason"`
		Failure  string `json:"failure"`
	}{c.Outcome, attempts > 1, attempts, reason, te.Kind})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("%s %q: %s; %s; %s", c.Method, text.Clip(c.Name, quoteLimit), te.Error(), state, why),
		Data:    data}
}

func effectOf(r *call.Resolution) string {
	if r == nil {
		return ""
	}
	return string(r.Effective().Effect.Value)
}

func (r *retrier) bucket(server string) *bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.buckets[server]
	if !ok {
		b = &bucket{tokens: float64(r.p.Budget), max: float64(r.p.Budget), refill: r.p.Refill, last: time.Now()}
		r.buckets[server] = b
	}
	return b
}

// bucket is a token bucket: max tokens, one more every refill.
type bucket struct {
	mu          sync.Mutex
	tokens, max float64
	refill      time.Duration
	last        time.Time
}

func (b *bucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.max, b.tokens+float64(now.Sub(b.last))/float64(b.refill))
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
