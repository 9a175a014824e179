package requeststate

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// EnvKeys is the environment variable that [RingFromEnv] reads when it is
// given no name.
const EnvKeys = "PREFLIGHT_REQUEST_STATE_KEYS"

// ParseKeys parses a key ring configuration: comma-separated entries
// "ID:SECRET", the sealing key first, where SECRET is base64 (standard or
// URL alphabet, padded or not) of at least 32 bytes. Spaces around entries
// and around the colon are ignored. Example:
//
//	k2:<base64 of 32 random bytes>,k1:<base64 of the previous secret>
//
// A secret can be made with `openssl rand -base64 32`. Error messages never
// contain secrets.
func ParseKeys(s string) ([]Key, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("requeststate: no keys in the configuration")
	}
	var keys []Key
	seen := map[string]bool{}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("requeststate: key entry %d is empty", i+1)
		}
		id, secret, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("requeststate: key entry %d has no ':' between ID and secret", i+1)
		}
		id, secret = strings.TrimSpace(id), strings.TrimSpace(secret)
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("requeststate: key entry %d: %w", i+1, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("requeststate: key ID %q appears twice", id)
		}
		seen[id] = true
		b, err := decodeSecret(secret)
		if err != nil {
			return nil, fmt.Errorf("requeststate: key %q: the secret is not base64", id)
		}
		if len(b) < MinSecretLen {
			return nil, fmt.Errorf("requeststate: key %q: secret of %d bytes, want at least %d", id, len(b), MinSecretLen)
		}
		keys = append(keys, Key{ID: id, Secret: b})
	}
	return keys, nil
}

func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "+/") {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// RingFromEnv returns the ring configured by the environment variable name
// (EnvKeys if name is ""), in the syntax of [ParseKeys]. If the variable is
// unset or empty it returns [NewRandomRing](opts): fine for one process,
// but replicas must share keys, or each refuses the others' tokens with
// [ReasonUnknownKey].
func RingFromEnv(name string, opts *Options) (*Ring, error) {
	if name == "" {
		name = EnvKeys
	}
	v := os.Getenv(name)
	if strings.TrimSpace(v) == "" {
		return NewRandomRing(opts)
	}
	keys, err := ParseKeys(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return NewRing(keys, opts)
}
