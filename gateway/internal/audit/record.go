package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// Decision is what the gateway decided for a call.
type Decision string

// Decisions.
const (
	Allow   Decision = "allow"
	Confirm Decision = "confirm"
	Deny    Decision = "deny"
)

// Outcome is how a call ended.
type Outcome string

// Outcomes.
const (
	// OutcomeOK: the upstream answered with a result.
	OutcomeOK Outcome = "ok"
	// OutcomeToolError: the upstream answered with a tool error (isError).
	OutcomeToolError Outcome = "tool_error"
	// OutcomeError: the call failed with a protocol or transport error.
	OutcomeError Outcome = "error"
	// OutcomeInputRequired: the upstream asked the client a question
	// (2026-07-28); the call goes on in a later request.
	OutcomeInputRequired Outcome = "input_required"
	// OutcomeUnknown: the call may or may not have run; also what a
	// record whose outcome was never recorded reads as.
	OutcomeUnknown Outcome = "unknown"
	// OutcomeDenied: a rule denied the call; it was not forwarded.
	OutcomeDenied Outcome = "denied"
	// OutcomeDeclined: the person asked declined; it was not forwarded.
	OutcomeDeclined Outcome = "declined"
	// OutcomeTimeout: no answer came in time (a confirmation, or the
	// upstream); a confirmation timeout leaves the upstream untouched.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCancelled: the client cancelled the call.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeQuarantined: the tool's definition changed since it was
	// pinned; the call was refused and not forwarded.
	OutcomeQuarantined Outcome = "quarantined"
	// OutcomeUndisclosed: the tool's description was not read first
	// (progressive disclosure); the call was refused and not forwarded.
	OutcomeUndisclosed Outcome = "undisclosed"
	// OutcomeNotConnected: the upstream signs in with OAuth and the
	// principal has not connected it (or must again); the call was
	// answered with the link to connect and not forwarded.
	OutcomeNotConnected Outcome = "not_connected"
)

// Outcomes lists every outcome.
func Outcomes() []Outcome {
	return []Outcome{OutcomeOK, OutcomeToolError, OutcomeError, OutcomeInputRequired, OutcomeUnknown,
		OutcomeDenied, OutcomeDeclined, OutcomeTimeout, OutcomeCancelled, OutcomeQuarantined, OutcomeUndisclosed,
		OutcomeNotConnected}
}

// Decisions lists every decision.
func Decisions() []Decision { return []Decision{Allow, Confirm, Deny} }

// Valid reports whether d is a known decision.
func (d Decision) Valid() bool { return d == Allow || d == Confirm || d == Deny }

// Valid reports whether o is a known outcome.
func (o Outcome) Valid() bool {
	for _, k := range Outcomes() {
		if o == k {
			return true
		}
	}
	return false
}

// Level is how much is recorded of a call.
type Level string

// Levels.
const (
	// LevelOff records nothing (a call that must be audited is still
	// recorded, at LevelSummary).
	LevelOff Level = "off"
	// LevelSummary records everything but the argument values: the
	// arguments are known by their digest.
	LevelSummary Level = "summary"
	// LevelFull records the argument values too, but for sensitive ones.
	LevelFull Level = "full"
)

// ParseLevel returns the level named s.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelOff, LevelSummary, LevelFull:
		return l, nil
	}
	return "", fmt.Errorf("audit level %q: want off, summary or full", text.Clip(s, 40))
}

// Record is one call as the audit log keeps it.
type Record struct {
	// ID is the store's number for the record, in the order records were
	// written.
	ID int64
	// Time is when the call started (UTC, to the microsecond).
	Time time.Time
	// Principal is who made the call ("" when the gateway authenticates
	// nobody).
	Principal string
	// Server and Tool name the upstream server and its tool.
	Server, Tool string
	// SignedInAs is, for an upstream the gateway signs in to with OAuth,
	// whose grant the call carried: a principal, "shared" for a shared
	// connection, "local" for the anonymous or stdio user; "" otherwise.
	SignedInAs string
	// Effect is the effect of this call, resolved or static.
	Effect hints.Effect
	// Destructive reports the effective destructiveHint of this call.
	Destructive bool
	// Decision is what the gateway decided, Reason why in words.
	Decision Decision
	Reason   string
	// Approver is who approved a confirmed call ("" for none).
	Approver string
	// DryRun reports a decision recorded but not enforced.
	DryRun bool
	// Level is the level the call was recorded at (summary or full).
	Level Level
	// ArgsDigest is the SHA-256 of the canonical JSON of the arguments, in
	// base64url (requeststate.ArgumentsDigest): equal arguments, equal
	// digests.
	ArgsDigest string
	// Args are the argument values, at LevelFull only, with sensitive
	// values withheld; nil otherwise.
	Args json.RawMessage

	// Outcome is how the call ended: OutcomeUnknown while (or if ever) it
	// was not recorded.
	Outcome Outcome
	// Ended is when the outcome was recorded; zero if it never was.
	Ended time.Time
	// Latency is how long the call took, to the microsecond.
	Latency time.Duration
	// Retries counts the times the gateway retried the call upstream.
	Retries int
	// Redactions counts what was redacted from the result, by kind.
	Redactions map[string]int
	// Error is the error the call ended with, if any, cut to
	// [MaxErrorBytes].
	Error string
}

// Bounds on what a record holds; longer text is cut.
const (
	// MaxNameBytes bounds a principal, server, tool, approver or the
	// identity signed in as.
	MaxNameBytes = 256
	// MaxReasonBytes bounds a decision's reason.
	MaxReasonBytes = 1024
	// MaxErrorBytes bounds an error.
	MaxErrorBytes = 2048
	// MaxRedactionKinds bounds the kinds of redaction counted; the rest
	// are added up under "other".
	MaxRedactionKinds = 32
)

// normalize makes r fit for any store: times in UTC to the microsecond,
// text valid UTF-8 without NUL and within its bounds.
func (r *Record) normalize() {
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	if !r.Ended.IsZero() {
		r.Ended = r.Ended.UTC().Truncate(time.Microsecond)
	}
	r.Latency = r.Latency.Truncate(time.Microsecond)
	r.Principal = storable(r.Principal, MaxNameBytes)
	r.Server = storable(r.Server, MaxNameBytes)
	r.Tool = storable(r.Tool, MaxNameBytes)
	r.Approver = storable(r.Approver, MaxNameBytes)
	r.SignedInAs = storable(r.SignedInAs, MaxNameBytes)
	r.Effect = hints.Effect(storable(string(r.Effect), 32))
	r.Reason = storable(r.Reason, MaxReasonBytes)
	r.Error = storable(r.Error, MaxErrorBytes)
	if r.Retries < 0 {
		r.Retries = 0
	}
	r.Redactions = boundRedactions(r.Redactions)
}

// Normalize returns a copy of r as a store keeps it: times in UTC to the
// microsecond, text valid UTF-8 without NUL bytes and cut to its bound,
// redactions bounded. Stores call it before writing.
func Normalize(r *Record) *Record {
	c := *r
	c.Redactions = r.Redactions
	c.normalize()
	return &c
}

// boundRedactions returns m without empty kinds, non-positive counts or
// more than MaxRedactionKinds kinds.
func boundRedactions(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int, min(len(m), MaxRedactionKinds))
	other := 0
	for k, n := range m {
		k = storable(k, 64)
		if n <= 0 || k == "" {
			continue
		}
		if len(out) >= MaxRedactionKinds-1 && out[k] == 0 {
			other += n
			continue
		}
		out[k] += n
	}
	if other > 0 {
		out["other"] += other
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// storable returns s as valid UTF-8 without NUL bytes, cut to at most max
// bytes on a rune boundary ("…" marks a cut).
func storable(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if len(s) <= max {
		return s
	}
	return text.Clip(s, max-len(text.Ellipsis))
}
