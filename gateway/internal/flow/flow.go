// Package flow tells when a call sends on a value the client was shown by
// another call: a secret read from one server and written to another.
//
// After a result comes back, the [Tracker] remembers keyed fingerprints
// (HMAC-SHA256, never the values) of the secrets package redact's
// detectors find in it and, when the result's sensitivity is at or above
// the tracker's, of every candidate value in it ([Tokens]), with the
// upstream and tool it came from and the call's number. Before a later
// call goes out, [Tracker.Check] fingerprints its arguments' strings,
// whole and token by token, and looks them up. The fingerprints live in
// a state.Flows, per scope: a principal, or a principal's legacy session.
package flow

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/hints"
)

// Defaults of [Options].
const (
	DefaultTTL         = time.Hour
	DefaultMax         = 4096
	DefaultSensitivity = hints.SensitivityRestricted
)

// MinWhole is the shortest whole string value of the arguments that is
// looked up as it is, besides its tokens.
const MinWhole = 8

// maxStrings bounds the strings of one result or of one call's arguments
// that are read, and maxBytes their bytes.
const (
	maxStrings = 1 << 14
	maxBytes   = 1 << 20
)

// Options configure a [Tracker]. Each zero field means its default.
type Options struct {
	// Flows keeps the fingerprints. Required.
	Flows state.Flows
	// Secret keys the fingerprints; replicas that share Flows need the
	// same. Nil: 32 random bytes, for this process only.
	Secret []byte
	// Sensitivity is the result sensitivity from which every candidate
	// value of a result is remembered, not only the secrets found in it.
	// Default [DefaultSensitivity].
	Sensitivity hints.Sensitivity
	// TTL is how long a value is remembered. Default [DefaultTTL].
	TTL time.Duration
	// Max bounds the values remembered per scope, the oldest dropped
	// first. Default [DefaultMax].
	Max int
}

// Tracker remembers what clients were shown and finds it in their later
// calls. It is safe for concurrent use.
type Tracker struct {
	flows       state.Flows
	key         []byte
	sensitivity hints.Sensitivity
	ttl         time.Duration
	max         int
	scanner     *redact.Redactor
}

// New returns a Tracker.
func New(o Options) (*Tracker, error) {
	if o.Flows == nil {
		return nil, errors.New("flow: Options.Flows is required")
	}
	t := &Tracker{flows: o.Flows, sensitivity: o.Sensitivity, ttl: o.TTL, max: o.Max}
	if t.sensitivity == "" {
		t.sensitivity = DefaultSensitivity
	}
	if t.sensitivity.Rank() < 0 {
		return nil, fmt.Errorf("flow: sensitivity %q: allowed: public, internal, confidential, restricted", o.Sensitivity)
	}
	if t.ttl == 0 {
		t.ttl = DefaultTTL
	}
	if t.ttl < 0 || t.ttl > state.MaxFlowTTL {
		return nil, fmt.Errorf("flow: ttl %v: want more than 0 and at most %v", o.TTL, state.MaxFlowTTL)
	}
	if t.max == 0 {
		t.max = DefaultMax
	}
	if t.max < 0 {
		return nil, fmt.Errorf("flow: max %d is negative", o.Max)
	}
	secret := o.Secret
	if secret == nil {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // never fails (crypto/rand)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "preflight flow fingerprints", 32)
	if err != nil {
		return nil, fmt.Errorf("flow: deriving the key: %w", err)
	}
	t.key = key
	if t.scanner, err = redact.SecretScanner(); err != nil {
		return nil, err
	}
	return t, nil
}

// Scope names whose values are kept together: a principal, and within it
// a legacy session ("" for none).
func Scope(principal, session string) string { return principal + "\x00" + session }

// Tick counts a call in scope and returns its number.
func (t *Tracker) Tick(ctx context.Context, scope string) (int64, error) {
	return t.flows.Tick(ctx, scope, t.ttl)
}

// ErrTooMany: the arguments hold more strings or bytes than are looked
// up, so they cannot be cleared.
var ErrTooMany = errors.New("flow: the arguments hold more strings than the gateway looks up")

// maxLookups bounds the lookups one at a time that Check makes when the
// first value found came from the upstream whose values do not count.
const maxLookups = 512

// Check returns where a value the arguments carry was read in scope, if
// one was: any string of args, whole, any of its tokens, or any piece of
// a token split at "/ . - + ~" (a key inside a URL or a name). Values read
// from skip (the destination, for write-back) do not count: another value
// found with them still does. Arguments too large to look up whole are
// ErrTooMany.
func (t *Tracker) Check(ctx context.Context, scope string, args map[string]any, skip string) (state.FlowSource, bool, error) {
	seen := map[string]bool{}
	var fps []string
	add := func(v string) {
		if fp := t.fingerprint(v); !seen[fp] {
			seen[fp] = true
			fps = append(fps, fp)
		}
	}
	addToken := func(v string) {
		add(v)
		pieces(v, add)
	}
	values, complete := stringsIn(args)
	for _, s := range values {
		if w := strings.TrimSpace(s); len(w) >= MinWhole {
			add(w)
		}
		Tokens(s, addToken)
	}
	if !complete {
		return state.FlowSource{}, false, ErrTooMany
	}
	if len(fps) == 0 {
		return state.FlowSource{}, false, nil
	}
	src, ok, err := t.flows.Find(ctx, scope, fps)
	if err != nil || !ok || skip == "" || src.Upstream != skip {
		return src, ok, err
	}
	// The first value found was read from skip: look for another.
	if len(fps) > maxLookups {
		return state.FlowSource{}, false, ErrTooMany
	}
	for _, fp := range fps {
		src, ok, err := t.flows.Find(ctx, scope, []string{fp})
		if err != nil {
			return src, false, err
		}
		if ok && src.Upstream != skip {
			return src, true, nil
		}
	}
	return state.FlowSource{}, false, nil
}

// pieces calls emit with each candidate piece of token split at the
// characters a key sits between inside a URL, a host name or a name.
func pieces(token string, emit func(string)) {
	split := strings.FieldsFunc(token, func(r rune) bool {
		return r == '/' || r == '.' || r == '-' || r == '+' || r == '~'
	})
	if len(split) < 2 {
		return
	}
	for _, p := range split {
		if Candidate(p) {
			emit(p)
		}
	}
}

// CarriesTokens reports whether the string values of args hold a candidate
// value ([Tokens]): with the store unavailable, only such a call may send on
// a value read elsewhere.
func CarriesTokens(args map[string]any) bool {
	found := false
	values, complete := stringsIn(args)
	if !complete {
		return true
	}
	for _, s := range values {
		Tokens(s, func(string) { found = true })
		if found {
			return true
		}
	}
	return false
}

// Record remembers the values of result (a JSON result of any method) as
// read in scope from src: the secrets found in it, and every candidate
// value when level, its sensitivity, is at or above the tracker's.
func (t *Tracker) Record(ctx context.Context, scope string, src state.FlowSource, result json.RawMessage, level hints.Sensitivity) error {
	texts := resultStrings(result)
	if len(texts) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var fps []string
	// One result adds at most an eighth of a scope's values, so that no
	// result flushes what earlier ones left (a hostile upstream's
	// thousands of fakes).
	limit := max(t.max/8, 1)
	add := func(v string) {
		if len(fps) >= limit {
			return
		}
		if fp := t.fingerprint(v); !seen[fp] {
			seen[fp] = true
			fps = append(fps, fp)
		}
	}
	blocks := make([]mcp.Content, len(texts))
	for i, s := range texts {
		blocks[i] = &mcp.TextContent{Text: s}
	}
	// Secrets first, so that a bound reached keeps them. A result too
	// large for the detectors has every candidate recorded instead.
	found, scanned := t.scanner.Find(&mcp.CallToolResult{Content: blocks})
	for v := range found {
		add(strings.TrimSpace(v))
		Tokens(v, add)
	}
	if !scanned || level.Rank() >= 0 && level.Rank() >= t.sensitivity.Rank() {
		for _, s := range texts {
			Tokens(s, add)
		}
	}
	if len(fps) == 0 {
		return nil
	}
	return t.flows.Mark(ctx, scope, fps, src, t.ttl, t.max)
}

// fingerprint is the first 16 bytes of HMAC-SHA256 of v.
func (t *Tracker) fingerprint(v string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// resultStrings returns the string values of a JSON result but those
// under _meta.
func resultStrings(result json.RawMessage) []string {
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "_meta")
	}
	out, _ := stringsIn(v)
	return out
}

// stringsIn returns the string values in v, depth first, at most
// maxStrings of at most maxBytes in all.
func stringsIn(v any) ([]string, bool) {
	var out []string
	size := 0
	complete := true
	var walk func(v any)
	walk = func(v any) {
		if len(out) >= maxStrings || size >= maxBytes {
			complete = false
			return
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
			size += len(v)
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out, complete
}
