package requeststate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzOpen: no string makes Open panic, every failure is an ErrInvalid
// with a reason, and nothing opens but the tokens the ring really sealed.
func FuzzOpen(f *testing.F) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	r := mustRing(f, []Key{testKey("k2", 2), testKey("k1", 1)}, &Options{Now: func() time.Time { return now }})
	b := testBinding(f)
	// Seed tokens are made by hand with fixed nonces: fuzzing runs this
	// function again in each worker process, and the tokens must be the same.
	real := map[string][]byte{}
	for i, p := range []string{"", "x", `{"asked":["confirm"]}`, strings.Repeat("answer ", 40)} {
		for _, k := range []Key{testKey("k2", 2), testKey("k1", 1)} {
			tok := sealByHand(f, k, [12]byte{byte(i), k.ID[1]}, now.Add(-time.Minute), DefaultTTL, b, []byte(p))
			real[tok] = []byte(p)
			f.Add(tok)
			raw, _ := base64.RawURLEncoding.DecodeString(tok)
			raw[len(raw)-1] ^= 1
			f.Add(base64.RawURLEncoding.EncodeToString(raw))
			f.Add(tok[:len(tok)-1])
			f.Add(tok + "A")
		}
	}
	for _, s := range []string{"", "A", "AQ", "AQI", "AQJrMQ", "AgJrMQ", "v1.AAAA", "====", "\x00", "\xff\xfe", "asked:confirm",
		base64.RawURLEncoding.EncodeToString([]byte{TokenVersion, 2, 'k', '1'}),
		base64.RawURLEncoding.EncodeToString(append([]byte{TokenVersion, 2, 'k', '2'}, make([]byte, 40)...)),
	} {
		f.Add(s)
	}
	other := b
	other.Target = "other"
	f.Fuzz(func(t *testing.T, token string) {
		payload, err := r.Open(token, b)
		want, isReal := real[token]
		switch {
		case err == nil && !isReal:
			t.Fatalf("Open accepted %q, which was never sealed", token)
		case err == nil && !bytes.Equal(payload, want):
			t.Fatalf("Open(%q) = %q, sealed %q", token, payload, want)
		case err != nil && isReal:
			t.Fatalf("Open refused a real token: %v", err)
		case err != nil && (!errors.Is(err, ErrInvalid) || ReasonOf(err) == "" || payload != nil):
			t.Fatalf("Open(%q) = %q, %v", token, payload, err)
		}
		if _, err := r.Open(token, other); err == nil {
			t.Fatalf("Open(%q) accepted another binding", token)
		}
	})
}

// FuzzArgumentsDigest: the digest never panics, accepts only JSON (or
// nothing), and the canonical form is a fixed point with the same digest.
func FuzzArgumentsDigest(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"b":1,"a":[1.0,2e0,"x"]}`, `{"a":1,"a":2}`, `{"K":1,"k":2}`,
		`-0.0e-0`, `1e999999999999999999999`, `"\u0000\ud83d\ude00"`, `[[[[]]]]`, `{"a":}`, `{} {}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		canon, err := canonicalArguments(json.RawMessage(data))
		if err != nil {
			if json.Valid(data) && !strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("valid JSON %q refused: %v", data, err)
			}
			return
		}
		if len(bytes.TrimSpace(data)) > 0 && !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted as %s", data, canon)
		}
		if !json.Valid(canon) {
			t.Fatalf("canonical form %s of %q is not JSON", canon, data)
		}
		again, err := canonicalArguments(json.RawMessage(canon))
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form %s of %q is not a fixed point: %s, %v", canon, data, again, err)
		}
	})
}
