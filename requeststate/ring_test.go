package requeststate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// clock is an injected clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func testKey(id string, fill byte) Key {
	return Key{ID: id, Secret: bytes.Repeat([]byte{fill}, 32)}
}

func mustRing(t testing.TB, keys []Key, opts *Options) *Ring {
	t.Helper()
	r, err := NewRing(keys, opts)
	if err != nil {
		t.Fatalf("NewRing: %v", err)
	}
	return r
}

func mustDigest(t testing.TB, args any) string {
	t.Helper()
	d, err := ArgumentsDigest(args)
	if err != nil {
		t.Fatalf("ArgumentsDigest(%v): %v", args, err)
	}
	return d
}

func testBinding(t testing.TB) Binding {
	return Binding{
		Method:    MethodCallTool,
		Target:    "delete_folder",
		Arguments: mustDigest(t, map[string]any{"path": "/srv/data", "recursive": true}),
		Audience:  "folders",
		Principal: "alice",
	}
}

func mustSeal(t testing.TB, r *Ring, b Binding, payload []byte) string {
	t.Helper()
	tok, err := r.Seal(b, payload)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return tok
}

// wantInvalid checks that err is a refusal for reason want and that its
// wire form is the one and only wire error.
func wantInvalid(t *testing.T, err error, want Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %q", want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
	}
	if got := ReasonOf(err); got != want {
		t.Errorf("reason = %q, want %q (error: %v)", got, want, err)
	}
	if !strings.Contains(err.Error(), string(want)) {
		t.Errorf("error %q does not name its reason %q", err, want)
	}
	checkWire(t, err)
}

func checkWire(t *testing.T, err error) {
	t.Helper()
	w := WireError(err)
	we, ok := w.(*jsonrpc.Error)
	if !ok {
		t.Fatalf("WireError(%v) is a %T, want *jsonrpc.Error", err, w)
	}
	got, _ := json.Marshal(we)
	if string(got) != `{"code":-32602,"message":"Invalid or expired requestState"}` {
		t.Errorf("wire error = %s", got)
	}
}

func TestRoundTrip(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	big := make([]byte, 4096)
	rand.Read(big)
	for _, payload := range [][]byte{nil, {}, []byte(`{"confirm":{"action":"accept","content":{"ok":true}}}`), big} {
		tok := mustSeal(t, r, b, payload)
		got, err := r.Open(tok, b)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if got == nil || !bytes.Equal(got, payload) {
			t.Errorf("Open = %q (nil: %v), want %q", got, got == nil, payload)
		}
		for i := 0; i < len(tok); i++ {
			if !base64URLChar(tok[i]) {
				t.Fatalf("token %q is not URL-safe at %d", tok, i)
			}
		}
	}
}

func TestTokenLayout(t *testing.T) {
	clk := newClock()
	r := mustRing(t, []Key{testKey("k1", 1)}, &Options{Now: clk.Now})
	b := testBinding(t)
	payload := []byte("hello")
	tok := mustSeal(t, r, b, payload)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] != TokenVersion || raw[1] != 2 || string(raw[2:4]) != "k1" {
		t.Errorf("header = % x, want 01 02 'k1'", raw[:4])
	}
	claimsLen := 6 + 3 + 1 + (1 + len(b.Target)) + (1 + 43) + (1 + len(b.Audience)) + (1 + len(b.Principal)) + len(payload)
	if want := 4 + nonceLen + claimsLen + tagLen; len(raw) != want {
		t.Errorf("token of %d bytes, want %d", len(raw), want)
	}
	// Open the claims by hand to check their layout.
	aead := r.byID["k1"]
	pt, err := aead.Open(nil, nil, raw[4:], raw[:4])
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseClaims(pt)
	if err != nil {
		t.Fatal(err)
	}
	if c.issued != clk.Now().UnixMilli() || c.lifetime != uint64(DefaultTTL.Milliseconds()) || c.binding() != b || string(c.payload) != "hello" {
		t.Errorf("claims = %+v", c)
	}
}

// sealByHand builds a token from the layout documented in the package
// documentation, with the standard library only and a chosen nonce.
func sealByHand(t testing.TB, k Key, nonce [12]byte, issued time.Time, lifetime time.Duration, b Binding, payload []byte) string {
	t.Helper()
	key, err := hkdf.Key(sha256.New, k.Secret, nil, "preflight/requeststate/v1/aes-256-gcm/"+k.ID, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	header := append([]byte{0x01, byte(len(k.ID))}, k.ID...)
	var claims []byte
	claims = binary.AppendVarint(claims, issued.UnixMilli())
	claims = binary.AppendUvarint(claims, uint64(lifetime.Milliseconds()))
	claims = append(claims, map[string]byte{"tools/call": 1, "prompts/get": 2, "resources/read": 3}[b.Method])
	for _, s := range []string{b.Target, b.Arguments, b.Audience, b.Principal} {
		claims = binary.AppendUvarint(claims, uint64(len(s)))
		claims = append(claims, s...)
	}
	claims = append(claims, payload...)
	raw := append(bytes.Clone(header), nonce[:]...)
	raw = gcm.Seal(raw, nonce[:], claims, header)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func TestHandMadeToken(t *testing.T) {
	clk := newClock()
	r := mustRing(t, []Key{testKey("k2", 2), testKey("k1", 1)}, &Options{Now: clk.Now})
	for _, b := range []Binding{
		testBinding(t),
		{Method: MethodGetPrompt, Target: "review", Arguments: mustDigest(t, nil), Audience: "srv"},
		{Method: MethodReadResource, Target: "file:///" + strings.Repeat("x", 300), Audience: "srv", Principal: "bob"},
	} {
		tok := sealByHand(t, testKey("k1", 1), [12]byte{1, 2, 3}, clk.Now().Add(-time.Minute), 5*time.Minute, b, []byte("by hand"))
		if got, err := r.Open(tok, b); err != nil || string(got) != "by hand" {
			t.Errorf("%s: Open = %q, %v", b.Method, got, err)
		}
	}
	// The lifetime in the token counts.
	b := testBinding(t)
	tok := sealByHand(t, testKey("k2", 2), [12]byte{}, clk.Now().Add(-2*time.Minute), time.Minute, b, nil)
	_, err := r.Open(tok, b)
	wantInvalid(t, err, ReasonExpired)
}

func TestFailureReasons(t *testing.T) {
	clk := newClock()
	opts := &Options{Now: clk.Now}
	r := mustRing(t, []Key{testKey("k1", 1)}, opts)
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("state"))
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	enc := base64.RawURLEncoding.EncodeToString
	with := func(f func(*Binding)) Binding { c := b; f(&c); return c }
	withRaw := func(f func([]byte) []byte) string { return enc(f(bytes.Clone(raw))) }

	otherKeyTok := mustSeal(t, mustRing(t, []Key{testKey("k9", 1)}, opts), b, nil)
	otherSecretTok := mustSeal(t, mustRing(t, []Key{testKey("k1", 2)}, opts), b, nil)
	oldTok := mustSeal(t, mustRing(t, []Key{testKey("k1", 1)}, &Options{Now: func() time.Time { return clk.Now().Add(-time.Hour) }}), b, nil)
	futureTok := mustSeal(t, mustRing(t, []Key{testKey("k1", 1)}, &Options{Now: func() time.Time { return clk.Now().Add(time.Hour) }}), b, nil)

	tests := []struct {
		name  string
		token string
		b     Binding
		want  Reason
	}{
		{"empty", "", b, ReasonMalformed},
		{"not base64url", "AQJrMQ+/", b, ReasonMalformed},
		{"padding", tok + "=", b, ReasonMalformed},
		{"newline", tok[:10] + "\n" + tok[10:], b, ReasonMalformed},
		{"dot prefix", "v1." + tok, b, ReasonMalformed},
		{"impossible length", "A", b, ReasonMalformed},
		{"non-canonical last character", nonCanonicalToken(t, r, b), b, ReasonMalformed},
		{"too long", strings.Repeat("A", MaxTokenLen+1), b, ReasonMalformed},
		{"version only", enc([]byte{TokenVersion}), b, ReasonMalformed},
		{"empty key ID", enc([]byte{TokenVersion, 0}), b, ReasonMalformed},
		{"key ID too long", enc(append([]byte{TokenVersion, MaxKeyIDLen + 1}, bytes.Repeat([]byte("k"), 80)...)), b, ReasonMalformed},
		{"key ID past the end", enc([]byte{TokenVersion, 5, 'k', '1'}), b, ReasonMalformed},
		{"invalid key ID", enc(append([]byte{TokenVersion, 2, 'k', ':'}, make([]byte, 40)...)), b, ReasonMalformed},
		{"no room for nonce and tag", withRaw(func(r []byte) []byte { return r[:4+nonceLen+tagLen-1] }), b, ReasonMalformed},
		{"version 0", withRaw(func(r []byte) []byte { r[0] = 0; return r }), b, ReasonVersion},
		{"version 2", withRaw(func(r []byte) []byte { r[0] = 2; return r }), b, ReasonVersion},
		{"unknown key", otherKeyTok, b, ReasonUnknownKey},
		{"same key ID, other secret", otherSecretTok, b, ReasonTampered},
		{"flipped ciphertext bit", withRaw(func(r []byte) []byte { r[len(r)/2] ^= 1; return r }), b, ReasonTampered},
		{"flipped nonce bit", withRaw(func(r []byte) []byte { r[5] ^= 0x80; return r }), b, ReasonTampered},
		{"flipped tag bit", withRaw(func(r []byte) []byte { r[len(r)-1] ^= 1; return r }), b, ReasonTampered},
		{"extended", withRaw(func(r []byte) []byte { return append(r, 0) }), b, ReasonTampered},
		{"truncated", withRaw(func(r []byte) []byte { return r[:len(r)-1] }), b, ReasonTampered},
		{"expired", oldTok, b, ReasonExpired},
		{"not yet valid", futureTok, b, ReasonNotYetValid},
		{"other method", tok, with(func(b *Binding) { b.Method = MethodGetPrompt }), ReasonMethod},
		{"unknown method", tok, with(func(b *Binding) { b.Method = "tools/list" }), ReasonMethod},
		{"other target", tok, with(func(b *Binding) { b.Target = "delete_file" }), ReasonTarget},
		{"other arguments", tok, with(func(b *Binding) { b.Arguments = mustDigest(t, map[string]any{"path": "/"}) }), ReasonArguments},
		{"no arguments", tok, with(func(b *Binding) { b.Arguments = "" }), ReasonArguments},
		{"other audience", tok, with(func(b *Binding) { b.Audience = "files" }), ReasonAudience},
		{"other principal", tok, with(func(b *Binding) { b.Principal = "mallory" }), ReasonPrincipal},
		{"unauthenticated", tok, with(func(b *Binding) { b.Principal = "" }), ReasonPrincipal},
	}
	seen := map[Reason]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, err := r.Open(tt.token, tt.b)
			if payload != nil {
				t.Errorf("payload = %q, want nil", payload)
			}
			wantInvalid(t, err, tt.want)
			seen[tt.want] = true
		})
	}
	for _, reason := range []Reason{ReasonMalformed, ReasonVersion, ReasonUnknownKey, ReasonTampered, ReasonExpired,
		ReasonNotYetValid, ReasonMethod, ReasonTarget, ReasonArguments, ReasonAudience, ReasonPrincipal} {
		if !seen[reason] {
			t.Errorf("no case for reason %q", reason)
		}
	}
	// A state sealed without a principal is refused to an authenticated one.
	anon := with(func(b *Binding) { b.Principal = "" })
	_, err := r.Open(mustSeal(t, r, anon, nil), b)
	wantInvalid(t, err, ReasonPrincipal)
}

// nonCanonicalToken returns a token of r whose last character is changed
// in its unused low bits only: it decodes to the same bytes without Strict.
func nonCanonicalToken(t *testing.T, r *Ring, b Binding) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for n := 0; ; n++ {
		tok := mustSeal(t, r, b, make([]byte, n))
		if len(tok)%4 == 0 {
			continue
		}
		i := strings.IndexByte(alphabet, tok[len(tok)-1])
		bad := tok[:len(tok)-1] + string(alphabet[i^1])
		lax, err := base64.RawURLEncoding.DecodeString(bad)
		strict, _ := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !bytes.Equal(lax, strict) {
			t.Fatalf("%q is not a non-canonical spelling of %q", bad, tok)
		}
		return bad
	}
}

func TestErrorDetailsHidePrincipal(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("secret payload"))
	other := b
	other.Principal = "mallory"
	_, err := r.Open(tok, other)
	for _, s := range []string{"alice", "mallory", "secret payload", b.Arguments} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains %q", err, s)
		}
	}
}

func TestWireError(t *testing.T) {
	if WireError(nil) != nil {
		t.Error("WireError(nil) != nil")
	}
	checkWire(t, errors.New("anything"))
	checkWire(t, &Error{Reason: ReasonExpired, Detail: "long ago"})
	if got := WireError(errors.New("x")).Error(); got != "Invalid or expired requestState" {
		t.Errorf("message = %q", got)
	}
	if ReasonOf(errors.New("x")) != "" || ReasonOf(nil) != "" {
		t.Error("ReasonOf of a foreign error is not empty")
	}
	if ReasonOf(fmt.Errorf("wrapped: %w", &Error{Reason: ReasonTarget})) != ReasonTarget {
		t.Error("ReasonOf does not unwrap")
	}
}

func TestRotation(t *testing.T) {
	clk := newClock()
	opts := &Options{Now: clk.Now}
	k1, k2 := testKey("k1", 1), testKey("k2", 2)
	b := testBinding(t)

	before := mustRing(t, []Key{k1}, opts)
	during := mustRing(t, []Key{k2, k1}, opts)
	after := mustRing(t, []Key{k2}, opts)

	old := mustSeal(t, before, b, []byte("old"))
	if got, err := during.Open(old, b); err != nil || string(got) != "old" {
		t.Errorf("rotating ring opens the old key's token: %q, %v", got, err)
	}
	fresh := mustSeal(t, during, b, []byte("new"))
	if id := tokenKeyID(t, fresh); id != "k2" {
		t.Errorf("rotating ring seals with %q, want k2", id)
	}
	if got, err := after.Open(fresh, b); err != nil || string(got) != "new" {
		t.Errorf("new ring opens the new key's token: %q, %v", got, err)
	}
	_, err := after.Open(old, b)
	wantInvalid(t, err, ReasonUnknownKey)
	_, err = before.Open(fresh, b)
	wantInvalid(t, err, ReasonUnknownKey)
	if got := during.KeyIDs(); strings.Join(got, ",") != "k2,k1" {
		t.Errorf("KeyIDs = %v", got)
	}
}

func tokenKeyID(t *testing.T, tok string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw[2 : 2+raw[1]])
}

func TestExpiryAndSkew(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		ttl, skew time.Duration
	}{
		{"defaults", Options{}, 10 * time.Minute, 30 * time.Second},
		{"custom", Options{TTL: time.Minute, Skew: 5 * time.Second}, time.Minute, 5 * time.Second},
		{"no skew", Options{TTL: 2 * time.Minute, Skew: -1}, 2 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			t0 := clk.Now()
			opts := tt.opts
			opts.Now = clk.Now
			r := mustRing(t, []Key{testKey("k1", 1)}, &opts)
			b := testBinding(t)
			tok := mustSeal(t, r, b, nil)
			for _, c := range []struct {
				at   time.Duration
				want Reason
			}{
				{0, ""},
				{tt.ttl, ""},
				{tt.ttl + tt.skew, ""},
				{tt.ttl + tt.skew + time.Millisecond, ReasonExpired},
				{24 * time.Hour, ReasonExpired},
				{-tt.skew, ""},
				{-tt.skew - time.Millisecond, ReasonNotYetValid},
				{-time.Hour, ReasonNotYetValid},
			} {
				clk.Set(t0.Add(c.at))
				_, err := r.Open(tok, b)
				if c.want == "" {
					if err != nil {
						t.Errorf("at %v: %v", c.at, err)
					}
					continue
				}
				wantInvalid(t, err, c.want)
			}
		})
	}
}

func TestOpenCapsLifetimeAtOwnTTL(t *testing.T) {
	clk := newClock()
	t0 := clk.Now()
	long := mustRing(t, []Key{testKey("k1", 1)}, &Options{TTL: time.Hour, Now: clk.Now})
	short := mustRing(t, []Key{testKey("k1", 1)}, &Options{TTL: time.Minute, Skew: -1, Now: clk.Now})
	b := testBinding(t)
	tok := mustSeal(t, long, b, nil)
	clk.Set(t0.Add(2 * time.Minute))
	if _, err := long.Open(tok, b); err != nil {
		t.Errorf("sealing ring: %v", err)
	}
	_, err := short.Open(tok, b)
	wantInvalid(t, err, ReasonExpired)
}

func TestTamperEveryCharacter(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte(`{"asked":["confirm"]}`))
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.~ \n\x00\xff"
	n := 0
	for i := 0; i < len(tok); i++ {
		for j := 0; j < len(chars); j++ {
			if chars[j] == tok[i] {
				continue
			}
			bad := tok[:i] + string(chars[j]) + tok[i+1:]
			if payload, err := r.Open(bad, b); err == nil || !errors.Is(err, ErrInvalid) || payload != nil {
				t.Fatalf("token with %q at %d: payload %q, error %v", chars[j], i, payload, err)
			}
			n++
		}
	}
	t.Logf("%d tampered tokens refused", n)
}

func TestTamperEveryBit(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("payload"))
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	for i := range raw {
		for bit := 0; bit < 8; bit++ {
			bad := bytes.Clone(raw)
			bad[i] ^= 1 << bit
			_, err := r.Open(base64.RawURLEncoding.EncodeToString(bad), b)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("byte %d bit %d: %v", i, bit, err)
			}
			var want []Reason
			switch {
			case i == 0:
				want = []Reason{ReasonVersion}
			case i < 4:
				want = []Reason{ReasonMalformed, ReasonUnknownKey}
			default:
				want = []Reason{ReasonTampered}
			}
			if got := ReasonOf(err); !containsReason(want, got) {
				t.Errorf("byte %d bit %d: reason %q, want one of %q", i, bit, got, want)
			}
		}
	}
}

func containsReason(rs []Reason, r Reason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func TestTruncationAndExtension(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("payload"))
	for i := 0; i < len(tok); i++ {
		if _, err := r.Open(tok[:i], b); !errors.Is(err, ErrInvalid) {
			t.Fatalf("prefix of %d characters: %v", i, err)
		}
		if _, err := r.Open(tok[i+1:], b); !errors.Is(err, ErrInvalid) {
			t.Fatalf("suffix from %d: %v", i+1, err)
		}
	}
	for _, c := range "AQgw-_" {
		if _, err := r.Open(tok+string(c), b); !errors.Is(err, ErrInvalid) {
			t.Fatalf("token + %q: %v", c, err)
		}
	}
}

func TestFreshTokens(t *testing.T) {
	clk := newClock() // frozen: same times for every seal
	r := mustRing(t, []Key{testKey("k1", 1)}, &Options{Now: clk.Now})
	b := testBinding(t)
	seen := map[string]bool{}
	nonces := map[string]bool{}
	for i := 0; i < 1000; i++ {
		tok := mustSeal(t, r, b, []byte("same"))
		if seen[tok] {
			t.Fatalf("seal %d repeated a token", i)
		}
		seen[tok] = true
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		nonce := string(raw[4 : 4+nonceLen])
		if nonces[nonce] {
			t.Fatalf("seal %d repeated a nonce", i)
		}
		nonces[nonce] = true
	}
}

func TestResealIsFresh(t *testing.T) {
	clk := newClock()
	t0 := clk.Now()
	r := mustRing(t, []Key{testKey("k1", 1)}, &Options{TTL: time.Minute, Skew: -1, Now: clk.Now})
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("round 1"))
	// Each round opens and re-seals; the chain lives as long as rounds come.
	for round := 2; round <= 5; round++ {
		clk.Set(t0.Add(time.Duration(round-1) * 50 * time.Second))
		p, err := r.Open(tok, b)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		next := mustSeal(t, r, b, append(p, " +"...))
		if next == tok {
			t.Fatal("re-seal returned the same token")
		}
		tok = next
	}
	clk.Set(t0.Add(4*50*time.Second + time.Minute + time.Millisecond))
	_, err := r.Open(tok, b)
	wantInvalid(t, err, ReasonExpired)
}

func TestSealRefusesIncompleteBinding(t *testing.T) {
	r := mustRing(t, []Key{testKey("k1", 1)}, nil)
	b := testBinding(t)
	for name, f := range map[string]func(*Binding){
		"method":   func(b *Binding) { b.Method = "tools/list" },
		"target":   func(b *Binding) { b.Target = "" },
		"audience": func(b *Binding) { b.Audience = "" },
	} {
		c := b
		f(&c)
		if _, err := r.Seal(c, nil); err == nil || errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Seal error = %v", name, err)
		}
	}
	if _, err := r.Seal(b, make([]byte, MaxTokenLen)); err == nil {
		t.Error("Seal accepted a payload that makes a token longer than MaxTokenLen")
	}
	// Without principal and without arguments is fine.
	c := Binding{Method: MethodReadResource, Target: "file:///a", Audience: "srv"}
	tok := mustSeal(t, r, c, nil)
	if _, err := r.Open(tok, c); err != nil {
		t.Error(err)
	}
}

func TestNewRingErrors(t *testing.T) {
	good := testKey("k1", 1)
	tests := []struct {
		name string
		keys []Key
		opts *Options
	}{
		{"no keys", nil, nil},
		{"short secret", []Key{{ID: "k1", Secret: make([]byte, 31)}}, nil},
		{"empty ID", []Key{{ID: "", Secret: good.Secret}}, nil},
		{"ID with colon", []Key{{ID: "k:1", Secret: good.Secret}}, nil},
		{"ID with comma", []Key{{ID: "k,1", Secret: good.Secret}}, nil},
		{"long ID", []Key{{ID: strings.Repeat("k", MaxKeyIDLen+1), Secret: good.Secret}}, nil},
		{"duplicate ID", []Key{good, testKey("k1", 2)}, nil},
		{"negative TTL", []Key{good}, &Options{TTL: -time.Second}},
		{"TTL under a millisecond", []Key{good}, &Options{TTL: time.Microsecond}},
	}
	for _, tt := range tests {
		if _, err := NewRing(tt.keys, tt.opts); err == nil {
			t.Errorf("%s: NewRing succeeded", tt.name)
		} else if strings.Contains(err.Error(), string(good.Secret)) {
			t.Errorf("%s: error shows the secret", tt.name)
		}
	}
	if _, err := NewRing([]Key{{ID: strings.Repeat("k", MaxKeyIDLen), Secret: good.Secret}}, nil); err != nil {
		t.Errorf("longest key ID: %v", err)
	}
}

func TestSameSecretOtherIDIsOtherKey(t *testing.T) {
	b := testBinding(t)
	a := mustRing(t, []Key{testKey("a", 1)}, nil)
	tok := mustSeal(t, a, b, nil)
	// A token whose key ID is rewritten to another ID with the same secret
	// is refused: the key ID is in the HKDF info and in the additional data.
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[2] = 'b'
	other := mustRing(t, []Key{testKey("b", 1)}, nil)
	_, err := other.Open(base64.RawURLEncoding.EncodeToString(raw), b)
	wantInvalid(t, err, ReasonTampered)
}

func TestNilRingUsesDefault(t *testing.T) {
	var r *Ring
	b := testBinding(t)
	tok := mustSeal(t, r, b, []byte("x"))
	if got, err := r.Open(tok, b); err != nil || string(got) != "x" {
		t.Fatalf("nil ring: %q, %v", got, err)
	}
	if got, err := Default().Open(tok, b); err != nil || string(got) != "x" {
		t.Fatalf("Default: %q, %v", got, err)
	}
	other, err := NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Open(tok, b)
	wantInvalid(t, err, ReasonUnknownKey)
	if len(r.KeyIDs()) != 1 || r.String() == "" {
		t.Errorf("nil ring: KeyIDs %v, String %q", r.KeyIDs(), r.String())
	}
}

func TestStringsHideSecrets(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	k := Key{ID: "k1", Secret: secret}
	r := mustRing(t, []Key{k}, nil)
	for _, s := range []string{
		fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprintf("%v", []Key{k}),
		fmt.Sprint(r), fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r),
	} {
		for _, leak := range []string{string(secret), base64.StdEncoding.EncodeToString(secret), fmt.Sprintf("%x", secret), fmt.Sprint(secret)} {
			if strings.Contains(s, leak) {
				t.Errorf("%q shows the secret", s)
			}
		}
		if !strings.Contains(s, "k1") {
			t.Errorf("%q does not name the key", s)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := mustRing(t, []Key{testKey("k2", 2), testKey("k1", 1)}, nil)
	b := testBinding(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := []byte(fmt.Sprint(g, i))
				tok, err := r.Seal(b, p)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := r.Open(tok, b); err != nil || !bytes.Equal(got, p) {
					t.Errorf("Open: %q, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
