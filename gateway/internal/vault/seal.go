package vault

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

	"github.com/preflightmcp/preflight/requeststate"
)

// Key is a sealing key: an ID stored beside what it seals, and a secret of
// at least 32 bytes. [requeststate.ParseKeys] reads a list of them.
type Key = requeststate.Key

// ErrCannotOpen reports a sealed value that no key opens: sealed by a key
// the vault was not given, altered, or copied from another row.
var ErrCannotOpen = errors.New("vault: a sealed value does not open")

const (
	sealVersion = 1
	hkdfInfo    = "preflight vault"
	maxKeyIDLen = requeststate.MaxKeyIDLen
)

// GenerateKey returns a new random key with ID "k1", for a single gateway
// that keeps its own.
func GenerateKey() (Key, error) {
	secret := make([]byte, requeststate.MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	return Key{ID: "k1", Secret: secret}, nil
}

// sealer seals with its first key and opens with any.
type sealer struct {
	sealID string
	aeads  map[string]cipher.AEAD
}

func newSealer(keys []Key) (*sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("vault: no key")
	}
	s := &sealer{sealID: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		switch {
		case k.ID == "" || len(k.ID) > maxKeyIDLen:
			return nil, fmt.Errorf("vault: key %d: an ID of 1 to %d bytes is needed", i+1, maxKeyIDLen)
		case len(k.Secret) < requeststate.MinSecretLen:
			return nil, fmt.Errorf("vault: key %q: secret of %d bytes, want at least %d", k.ID, len(k.Secret), requeststate.MinSecretLen)
		}
		if _, dup := s.aeads[k.ID]; dup {
			return nil, fmt.Errorf("vault: key ID %q appears twice", k.ID)
		}
		key, err := hkdf.Key(sha256.New, k.Secret, nil, hkdfInfo, 32)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		if s.aeads[k.ID], err = cipher.NewGCMWithRandomNonce(block); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// additionalData binds a sealed value to its field and row, so that a
// value moved to another field or row does not open.
func additionalData(field, principal, server string) []byte {
	ad := []byte(hkdfInfo)
	for _, s := range []string{field, principal, server} {
		ad = binary.AppendUvarint(ad, uint64(len(s)))
		ad = append(ad, s...)
	}
	return ad
}

// seal returns plaintext sealed for the field of the row: base64 of the
// version, the key ID (length first), then nonce, ciphertext and tag.
func (s *sealer) seal(field, principal, server string, plaintext []byte) string {
	out := append([]byte{sealVersion, byte(len(s.sealID))}, s.sealID...)
	out = s.aeads[s.sealID].Seal(out, nil, plaintext, additionalData(field, principal, server))
	return base64.RawURLEncoding.EncodeToString(out)
}

// open opens what seal returned for the same field and row.
func (s *sealer) open(field, principal, server, sealed string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(b) < 2 || b[0] != sealVersion || len(b) < 2+int(b[1]) {
		return nil, fmt.Errorf("%w: the %s of %q for %q is not a sealed value", ErrCannotOpen, field, server, principal)
	}
	id := string(b[2 : 2+int(b[1])])
	aead, ok := s.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w: the %s of %q for %q is sealed by key %q, which the vault was not given", ErrCannotOpen, field, server, principal, id)
	}
	plaintext, err := aead.Open(nil, nil, b[2+int(b[1]):], additionalData(field, principal, server))
	if err != nil {
		return nil, fmt.Errorf("%w: the %s of %q for %q fails authentication under key %q (altered, or copied from another row)", ErrCannotOpen, field, server, principal, id)
	}
	return plaintext, nil
}
