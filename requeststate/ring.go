package requeststate

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Token layout constants; the package documentation shows the whole layout.
const (
	// TokenVersion is byte 0 of every token this package seals.
	TokenVersion = 0x01
	// MaxKeyIDLen is the longest key ID; its length is byte 1 of a token.
	MaxKeyIDLen = 64
	// MinSecretLen is the shortest secret a [Key] may have.
	MinSecretLen = 32
	// MaxTokenLen is the longest token, in characters, that Seal produces
	// and Open looks at.
	MaxTokenLen = 1 << 20

	nonceLen = 12
	tagLen   = 16
	// hkdfInfo is followed by the key ID in the HKDF info string.
	hkdfInfo = "preflight/requeststate/v1/aes-256-gcm/"
)

// Defaults of [Options].
const (
	DefaultTTL  = 10 * time.Minute
	DefaultSkew = 30 * time.Second
)

// A Key is one entry of a [Ring].
type Key struct {
	// ID names the key in every token it seals: 1 to 64 ASCII letters,
	// digits, '.', '_' or '-'. Keep it short; it is sent in the clear.
	ID string
	// Secret is at least 32 bytes of secret randomness; the AES-256 key is
	// derived from it with HKDF-SHA256. The ring keeps no copy of it.
	Secret []byte
}

// String describes k without its secret.
func (k Key) String() string {
	return fmt.Sprintf("requeststate.Key{ID: %q, Secret: %d bytes}", k.ID, len(k.Secret))
}

// GoString describes k without its secret.
func (k Key) GoString() string { return k.String() }

// Options configure a [Ring]. A nil *Options means all defaults.
type Options struct {
	// TTL is how long a sealed token is valid. Zero means DefaultTTL
	// (10 minutes). Open also refuses a token issued longer than TTL (plus
	// Skew) ago, whatever lifetime it carries.
	TTL time.Duration
	// Skew is the clock difference allowed between the replica that sealed
	// a token and the one that opens it, on both ends of its validity.
	// Zero means DefaultSkew (30 seconds); a negative value means none.
	Skew time.Duration
	// Now returns the current time. Nil means time.Now; tests inject a
	// clock here.
	Now func() time.Time
}

// A Ring seals and opens tokens. The first key seals; every key opens.
// A Ring is safe for concurrent use. A nil *Ring uses [Default].
type Ring struct {
	sealID   string
	sealAEAD cipher.AEAD
	byID     map[string]cipher.AEAD
	ids      []string
	ttl      time.Duration
	skew     time.Duration
	now      func() time.Time
}

// NewRing returns a ring over keys; keys[0] seals, every key opens. It
// fails if there is no key, a key ID is invalid or repeated, a secret is
// shorter than 32 bytes, or an option is negative where it may not be.
func NewRing(keys []Key, opts *Options) (*Ring, error) {
	if len(keys) == 0 {
		return nil, errors.New("requeststate: a ring needs at least one key")
	}
	r := &Ring{byID: make(map[string]cipher.AEAD, len(keys)), ttl: DefaultTTL, skew: DefaultSkew, now: time.Now}
	if opts != nil {
		switch {
		case opts.TTL < 0:
			return nil, fmt.Errorf("requeststate: negative TTL %v", opts.TTL)
		case opts.TTL > 0 && opts.TTL < time.Millisecond:
			return nil, fmt.Errorf("requeststate: TTL %v is shorter than a millisecond", opts.TTL)
		case opts.TTL > 0:
			r.ttl = opts.TTL
		}
		switch {
		case opts.Skew < 0:
			r.skew = 0
		case opts.Skew > 0:
			r.skew = opts.Skew
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
	}
	for i, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, fmt.Errorf("requeststate: key %d: %w", i, err)
		}
		if len(k.Secret) < MinSecretLen {
			return nil, fmt.Errorf("requeststate: key %q: secret of %d bytes, want at least %d", k.ID, len(k.Secret), MinSecretLen)
		}
		if _, dup := r.byID[k.ID]; dup {
			return nil, fmt.Errorf("requeststate: key ID %q appears twice", k.ID)
		}
		aead, err := deriveAEAD(k)
		if err != nil {
			return nil, fmt.Errorf("requeststate: key %q: %w", k.ID, err)
		}
		r.byID[k.ID] = aead
		r.ids = append(r.ids, k.ID)
		if i == 0 {
			r.sealID, r.sealAEAD = k.ID, aead
		}
	}
	return r, nil
}

// NewRandomRing returns a ring with one random key that exists only in this
// process: tokens it seals cannot be opened after a restart or by another
// replica (they fail with [ReasonUnknownKey]).
func NewRandomRing(opts *Options) (*Ring, error) {
	var id [6]byte
	rand.Read(id[:])
	secret := make([]byte, 32)
	rand.Read(secret)
	return NewRing([]Key{{ID: base64.RawURLEncoding.EncodeToString(id[:]), Secret: secret}}, opts)
}

var defaultRing = sync.OnceValue(func() *Ring {
	r, err := NewRandomRing(nil)
	if err != nil {
		panic(err) // unreachable: the key and options are valid
	}
	return r
})

// Default returns the process-wide ring used by a nil *Ring: one random key,
// created on first use, with the default options.
func Default() *Ring { return defaultRing() }

// KeyIDs returns the IDs of the ring's keys, the sealing key first.
func (r *Ring) KeyIDs() []string {
	r = r.orDefault()
	return append([]string(nil), r.ids...)
}

// String describes r without its keys.
func (r *Ring) String() string {
	r = r.orDefault()
	return fmt.Sprintf("requeststate.Ring{keys: %v, ttl: %v, skew: %v}", r.ids, r.ttl, r.skew)
}

// GoString describes r without its keys.
func (r *Ring) GoString() string { return r.String() }

func (r *Ring) orDefault() *Ring {
	if r == nil {
		return Default()
	}
	return r
}

func checkKeyID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen {
		return fmt.Errorf("key ID of %d characters, want 1 to %d", len(id), MaxKeyIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !keyIDChar(id[i]) {
			return fmt.Errorf("key ID %q: character %q not allowed (letters, digits, '.', '_', '-')", id, id[i])
		}
	}
	return nil
}

func keyIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

func deriveAEAD(k Key) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, k.Secret, nil, hkdfInfo+k.ID, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCMWithRandomNonce(block)
}

// Seal returns a new token that carries payload and is bound to b and to
// the current time. Every call uses a fresh random nonce, so two tokens for
// the same input differ. Seal fails only if b is incomplete (see
// [Binding]) or the token would exceed MaxTokenLen.
func (r *Ring) Seal(b Binding, payload []byte) (string, error) {
	r = r.orDefault()
	code, err := b.check()
	if err != nil {
		return "", err
	}
	now := r.now()
	n := len(r.sealID)
	ptMax := 2*binary.MaxVarintLen64 + 1 + 4*binary.MaxVarintLen64 +
		len(b.Target) + len(b.Arguments) + len(b.Audience) + len(b.Principal) + len(payload)
	if base64.RawURLEncoding.EncodedLen(2+n+nonceLen+ptMax+tagLen) > MaxTokenLen {
		return "", fmt.Errorf("requeststate: a payload of %d bytes makes a token longer than %d characters", len(payload), MaxTokenLen)
	}

	// The header, which is also the additional data (a copy: Seal writes
	// into raw, and its output may not overlap the additional data).
	var hdr [2 + MaxKeyIDLen]byte
	hdr[0] = TokenVersion
	hdr[1] = byte(n)
	copy(hdr[2:], r.sealID)
	aad := hdr[:2+n]
	raw := make([]byte, 0, len(aad)+nonceLen+ptMax+tagLen)
	raw = append(raw, aad...)

	// The claims go right after the header, where Seal moves them to
	// encrypt them in place behind the nonce.
	pt := raw[len(aad):]
	pt = binary.AppendVarint(pt, now.UnixMilli())
	pt = binary.AppendUvarint(pt, uint64(r.ttl.Milliseconds()))
	pt = append(pt, code)
	pt = appendString(pt, b.Target)
	pt = appendString(pt, b.Arguments)
	pt = appendString(pt, b.Audience)
	pt = appendString(pt, b.Principal)
	pt = append(pt, payload...)

	raw = r.sealAEAD.Seal(raw, nil, pt, aad)
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Open checks token and returns its payload (never nil, possibly empty).
// The token must have been sealed by a key of the ring, be within its
// validity (with the skew allowance) and be bound to exactly b. Any failure
// is an [Error] that matches [ErrInvalid] and says why; give the client
// [WireError] of it, never the error itself.
func (r *Ring) Open(token string, b Binding) ([]byte, error) {
	r = r.orDefault()
	if token == "" {
		return nil, &Error{Reason: ReasonMalformed, Detail: "empty"}
	}
	if len(token) > MaxTokenLen {
		return nil, &Error{Reason: ReasonMalformed, Detail: fmt.Sprintf("%d characters, more than %d", len(token), MaxTokenLen)}
	}
	for i := 0; i < len(token); i++ {
		if !base64URLChar(token[i]) {
			return nil, &Error{Reason: ReasonMalformed, Detail: fmt.Sprintf("character %d is not base64url", i)}
		}
	}
	// Strict: the unused bits of the last character must be zero, so that
	// exactly one string encodes a given token.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return nil, &Error{Reason: ReasonMalformed, Detail: "bad base64url: " + err.Error()}
	}
	if len(raw) == 0 {
		return nil, &Error{Reason: ReasonMalformed, Detail: "no bytes"}
	}
	if raw[0] != TokenVersion {
		return nil, &Error{Reason: ReasonVersion, Detail: fmt.Sprintf("version byte 0x%02x", raw[0])}
	}
	if len(raw) < 2 {
		return nil, &Error{Reason: ReasonMalformed, Detail: "truncated header"}
	}
	n := int(raw[1])
	if n == 0 || n > MaxKeyIDLen || len(raw) < 2+n {
		return nil, &Error{Reason: ReasonMalformed, Detail: fmt.Sprintf("key ID length %d in a token of %d bytes", n, len(raw))}
	}
	aad, sealed := raw[:2+n], raw[2+n:]
	aead, ok := r.byID[string(aad[2:])]
	if !ok {
		id := string(aad[2:])
		if checkKeyID(id) != nil {
			return nil, &Error{Reason: ReasonMalformed, Detail: "invalid key ID"}
		}
		return nil, &Error{Reason: ReasonUnknownKey, Detail: fmt.Sprintf("key ID %q is not in the ring %v", id, r.ids)}
	}
	if len(sealed) < nonceLen+tagLen {
		return nil, &Error{Reason: ReasonMalformed, Detail: fmt.Sprintf("%d bytes after the header, want at least %d", len(sealed), nonceLen+tagLen)}
	}
	pt, err := aead.Open(sealed[:0], nil, sealed, aad) // in place
	if err != nil {
		return nil, &Error{Reason: ReasonTampered, Detail: fmt.Sprintf("authentication failed under key %q", aad[2:])}
	}
	c, err := parseClaims(pt)
	if err != nil {
		return nil, &Error{Reason: ReasonMalformed, Detail: "authenticated claims do not parse: " + err.Error()}
	}
	if err := r.checkTime(c); err != nil {
		return nil, err
	}
	if err := c.compare(b); err != nil {
		return nil, err
	}
	return c.payload, nil
}

func base64URLChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

type claims struct {
	issued   int64 // Unix milliseconds
	lifetime uint64
	method   string
	// target, arguments, audience and principal alias the plaintext.
	target, arguments, audience, principal []byte
	payload                                []byte
}

func parseClaims(pt []byte) (claims, error) {
	var c claims
	var n int
	if c.issued, n = binary.Varint(pt); n <= 0 {
		return c, errors.New("issue time")
	}
	pt = pt[n:]
	if c.lifetime, n = binary.Uvarint(pt); n <= 0 || c.lifetime > 1<<53 {
		return c, errors.New("lifetime")
	}
	pt = pt[n:]
	if len(pt) == 0 {
		return c, errors.New("method")
	}
	if c.method = methodName(pt[0]); c.method == "" {
		return c, fmt.Errorf("method code %d", pt[0])
	}
	pt = pt[1:]
	for _, f := range []*[]byte{&c.target, &c.arguments, &c.audience, &c.principal} {
		l, n := binary.Uvarint(pt)
		if n <= 0 || l > uint64(len(pt)-n) {
			return c, errors.New("binding field")
		}
		*f = pt[n : n+int(l) : n+int(l)]
		pt = pt[n+int(l):]
	}
	c.payload = pt[:len(pt):len(pt)]
	return c, nil
}

// binding returns the sealed binding.
func (c claims) binding() Binding {
	return Binding{Method: c.method, Target: string(c.target), Arguments: string(c.arguments),
		Audience: string(c.audience), Principal: string(c.principal)}
}

// compare reports the first field of want that differs from the sealed
// binding. The arguments digests and principals are not logged.
func (c claims) compare(want Binding) error {
	switch {
	case string(c.audience) != want.Audience:
		return &Error{Reason: ReasonAudience, Detail: fmt.Sprintf("sealed for %q, opened by %q", c.audience, want.Audience)}
	case string(c.principal) != want.Principal:
		return &Error{Reason: ReasonPrincipal, Detail: principalDetail(len(c.principal) > 0, want.Principal != "")}
	case c.method != want.Method:
		return &Error{Reason: ReasonMethod, Detail: fmt.Sprintf("sealed for %q, presented with %q", c.method, want.Method)}
	case string(c.target) != want.Target:
		return &Error{Reason: ReasonTarget, Detail: fmt.Sprintf("sealed for %q, presented with %q", c.target, want.Target)}
	case string(c.arguments) != want.Arguments:
		return &Error{Reason: ReasonArguments, Detail: fmt.Sprintf("sealed for other arguments of %q", c.target)}
	}
	return nil
}

func principalDetail(sealed, presented bool) string {
	switch {
	case !sealed:
		return "sealed without a principal, presented by an authenticated one"
	case !presented:
		return "sealed for an authenticated principal, presented without one"
	}
	return "sealed for another authenticated principal"
}

func (r *Ring) checkTime(c claims) error {
	now := r.now().UnixMilli()
	skew := r.skew.Milliseconds()
	issued := time.UnixMilli(c.issued).UTC()
	if c.issued > now+skew {
		return &Error{Reason: ReasonNotYetValid, Detail: fmt.Sprintf("issued at %s, %v in the future", issued.Format(time.RFC3339Nano), time.Duration(c.issued-now)*time.Millisecond)}
	}
	lifetime := min(int64(c.lifetime), r.ttl.Milliseconds())
	if now > c.issued+lifetime+skew {
		return &Error{Reason: ReasonExpired, Detail: fmt.Sprintf("issued at %s with a lifetime of %v (this ring's TTL %v), expired %v ago",
			issued.Format(time.RFC3339Nano), time.Duration(c.lifetime)*time.Millisecond, r.ttl,
			time.Duration(now-c.issued-lifetime)*time.Millisecond)}
	}
	return nil
}
