package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// Store keeps audit records. Every method is safe for concurrent use, and
// several stores (several gateway replicas) may share one database.
type Store interface {
	// Begin writes r as a call that has not ended (its outcome fields are
	// ignored) and returns its ID once the record is committed and
	// durable.
	Begin(ctx context.Context, r *Record) (int64, error)
	// Finish records the outcome of the call r.ID that Begin wrote: its
	// Outcome, Ended, Latency, Retries, Redactions and Error. It returns
	// an error wrapping ErrNotPending if there is no such call or its
	// outcome was already recorded otherwise; recording the same outcome
	// again succeeds.
	Finish(ctx context.Context, r *Record) error
	// Write writes complete records (their IDs are ignored) in one
	// transaction.
	Write(ctx context.Context, rs []*Record) error
	// Query returns the records f selects, oldest first (newest first with
	// f.Newest). The iterator yields a non-nil error at most once, last.
	Query(ctx context.Context, f Filter) iter.Seq2[*Record, error]
	// Close releases the store.
	Close() error
}

// ErrNotPending is wrapped by Store.Finish for a call that did not begin or
// already ended.
var ErrNotPending = errors.New("no such call awaiting its outcome")

// Filter selects records; its zero value selects them all.
type Filter struct {
	// Since and Until bound the start time: Since <= Time < Until; a
	// zero bound is open.
	Since, Until time.Time
	// Principal, Server and Tool, if set, must match exactly.
	Principal, Server, Tool string
	// Effect, Decision and Outcome, if set, must match; OutcomeUnknown
	// also selects calls whose outcome was never recorded.
	Effect   hints.Effect
	Decision Decision
	Outcome  Outcome
	// Limit, if positive, is the most records returned.
	Limit int
	// Newest returns the newest records first (with Limit: the latest).
	Newest bool
}

// MaxLimit bounds Filter.Limit in ParseFilter.
const MaxLimit = 1_000_000

// filterKeys are the keys ParseFilter reads.
var filterKeys = []string{"since", "until", "principal", "server", "tool", "effect", "decision", "outcome", "limit", "order"}

// ParseFilter reads a filter from query parameters (a page's URL query, or
// the flags of "preflight audit"):
//
//	since, until  a time (RFC 3339, or a date 2006-01-02) or a duration
//	              before now (90s, 15m, 1h, 7d)
//	principal, server, tool   exact names
//	effect        read, write, external or delete
//	decision      allow, confirm or deny
//	outcome       ok, tool_error, error, input_required, unknown, denied,
//	              declined, timeout, cancelled, quarantined, undisclosed or
//	              not_connected
//	limit         the most records, 1 to 1000000
//	order         oldest (the default) or newest
//
// An unknown key, a repeated key or a bad value is an error that says what
// is expected.
func ParseFilter(q url.Values, now time.Time) (Filter, error) {
	var f Filter
	for k, vs := range q {
		if !slices.Contains(filterKeys, k) {
			return Filter{}, fmt.Errorf("unknown filter %q: want one of %s", text.Clip(k, 40), strings.Join(filterKeys, ", "))
		}
		if len(vs) != 1 {
			return Filter{}, fmt.Errorf("filter %s given %d times: give it once", k, len(vs))
		}
	}
	var err error
	if v := q.Get("since"); v != "" {
		if f.Since, err = parseWhen(v, now); err != nil {
			return Filter{}, fmt.Errorf("since: %w", err)
		}
	}
	if v := q.Get("until"); v != "" {
		if f.Until, err = parseWhen(v, now); err != nil {
			return Filter{}, fmt.Errorf("until: %w", err)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return Filter{}, fmt.Errorf("since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	for _, p := range []struct {
		key string
		dst *string
	}{{"principal", &f.Principal}, {"server", &f.Server}, {"tool", &f.Tool}} {
		v := q.Get(p.key)
		if len(v) > MaxNameBytes {
			return Filter{}, fmt.Errorf("%s: longer than %d bytes", p.key, MaxNameBytes)
		}
		if storable(v, MaxNameBytes) != v {
			return Filter{}, fmt.Errorf("%s: not valid UTF-8 text", p.key)
		}
		*p.dst = v
	}
	if v := q.Get("effect"); v != "" {
		if f.Effect = hints.Effect(v); f.Effect.Rank() < 0 {
			return Filter{}, fmt.Errorf("effect %q: want read, write, external or delete", text.Clip(v, 40))
		}
	}
	if v := q.Get("decision"); v != "" {
		if f.Decision = Decision(v); !f.Decision.Valid() {
			return Filter{}, fmt.Errorf("decision %q: want allow, confirm or deny", text.Clip(v, 40))
		}
	}
	if v := q.Get("outcome"); v != "" {
		if f.Outcome = Outcome(v); !f.Outcome.Valid() {
			names := make([]string, 0, len(Outcomes()))
			for _, o := range Outcomes() {
				names = append(names, string(o))
			}
			return Filter{}, fmt.Errorf("outcome %q: want one of %s", text.Clip(v, 40), strings.Join(names, ", "))
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return Filter{}, fmt.Errorf("limit %q: want a number from 1 to %d", text.Clip(v, 40), MaxLimit)
		}
		f.Limit = n
	}
	switch v := q.Get("order"); v {
	case "", "oldest":
	case "newest":
		f.Newest = true
	default:
		return Filter{}, fmt.Errorf("order %q: want oldest or newest", text.Clip(v, 40))
	}
	return f, nil
}

// maxAgo bounds a duration before now, so that now minus it stays a time.
const maxAgo = 100 * 365 * 24 * time.Hour

// parseWhen reads a time or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		if err == nil && (n < 0 || n > int(maxAgo/(24*time.Hour))) {
			err = errors.New("out of range")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < 0 || d > maxAgo {
		return time.Time{}, fmt.Errorf("%q: want a time (2006-01-02T15:04:05Z, 2006-01-02) or a duration before now (90s, 15m, 1h, 7d)", text.Clip(s, 40))
	}
	return now.Add(-d).UTC(), nil
}
