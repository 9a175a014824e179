package state

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"
)

// Nonces are single-use tokens shared by every replica: a gateway issues
// one when it seals state that may be answered only once (a confirmation
// in requestState), and uses it when the answer comes back. Use reports
// first for exactly one Use of a nonce within its ttl, however many
// callers and replicas race.
//
// Each nonce carries the epoch it was issued under. The epoch changes
// whenever the store may have forgotten used nonces (the in-process store
// at each start of the gateway; Redis when it restarts, fails over or
// loses its data), and Use refuses a nonce of an earlier epoch with
// [ErrStaleEpoch]: state sealed before the loss cannot be replayed after
// it.
type Nonces interface {
	// Issue returns a new nonce under the current epoch.
	Issue(ctx context.Context) (string, error)
	// Use consumes nonce, which Issue returned: first is true for the
	// first Use within ttl and false for every later one. ttl must cover
	// the remaining life of the state that carries the nonce (its expiry
	// plus the clock skew allowed), rounded up to the millisecond and at
	// most [MaxNonceTTL]. Any error means the nonce must be refused.
	Use(ctx context.Context, nonce string, ttl time.Duration) (first bool, err error)
	// Epoch returns the current epoch, 22 characters.
	Epoch(ctx context.Context) (string, error)
}

// MaxNonceTTL bounds the ttl of [Nonces.Use]: far beyond any sealed
// state's life, and short enough that the in-process set drains.
const MaxNonceTTL = 24 * time.Hour

// DefaultNonceCapacity is how many unexpired nonces the in-process store
// holds unless [Options.NonceCapacity] says otherwise: about 141 MB when
// full (docs/state.md), and a sustained 1,700 confirmations a second
// with ten-minute state.
const DefaultNonceCapacity = 1 << 20

// A nonce is EPOCH.RANDOM: two unpadded base64url encodings of 16 random
// bytes.
const (
	tokenLen = 22
	nonceLen = 2*tokenLen + 1
)

var b64 = base64.RawURLEncoding

// newToken returns 16 random bytes, base64url-encoded.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return b64.EncodeToString(b[:])
}

// parseNonce checks nonce's form and returns its epoch.
func parseNonce(nonce string) (string, error) {
	if len(nonce) != nonceLen || nonce[tokenLen] != '.' {
		return "", invalid("not a nonce of this store (want %d characters EPOCH.RANDOM, got %d)", nonceLen, len(nonce))
	}
	for i := 0; i < len(nonce); i++ {
		if c := nonce[i]; i != tokenLen && !isB64(c) {
			return "", invalid("not a nonce of this store (a character outside base64url)")
		}
	}
	return nonce[:tokenLen], nil
}

func isB64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxNonceTTL {
		return invalid("nonce ttl %v: want more than 0 and at most %v", ttl, MaxNonceTTL)
	}
	return nil
}

// ttlMillis is ttl in whole milliseconds, rounded up: Redis's unit.
func ttlMillis(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

func staleEpoch(epoch string) error {
	return fmt.Errorf("%w (issued under %s): the store may have forgotten whether it was used", ErrStaleEpoch, epoch)
}

// memNonces is the in-process Nonces: a bounded expiring set.
type memNonces struct {
	epoch string
	clock *clock

	mu  sync.Mutex
	set *expiring
}

func newMemNonces(capacity int, c *clock) *memNonces {
	return &memNonces{epoch: newToken(), clock: c, set: newExpiring(capacity)}
}

func (m *memNonces) Issue(context.Context) (string, error) {
	return m.epoch + "." + newToken(), nil
}

func (m *memNonces) Epoch(context.Context) (string, error) { return m.epoch, nil }

func (m *memNonces) Use(_ context.Context, nonce string, ttl time.Duration) (bool, error) {
	epoch, err := parseNonce(nonce)
	if err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	if epoch != m.epoch {
		return false, staleEpoch(epoch)
	}
	now := m.clock.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set.sweep(now)
	if _, used := m.set.get(nonce); used {
		return false, nil
	}
	if !m.set.set(nonce, now+ttlMillis(ttl)*1000) {
		return false, fmt.Errorf("%w: %d unexpired nonces, the bound (Options.NonceCapacity); refusing rather than forgetting one, which would allow a replay", ErrFull, m.set.max)
	}
	return true, nil
}

// clock is the in-process stores' time: microseconds since the store was
// made, on the monotonic clock.
type clock struct{ base time.Time }

func newClock() *clock { return &clock{base: time.Now()} }

func (c *clock) now() int64 { return time.Since(c.base).Microseconds() }
