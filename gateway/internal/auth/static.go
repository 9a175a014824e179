package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TokenPrefix starts every token [NewToken] makes, so that a leaked one is
// easy to recognise.
const TokenPrefix = "pft_"

// tokenBytes is the entropy of a token NewToken makes.
const tokenBytes = 32

// NewToken returns a new random token (256 bits from crypto/rand) and the
// entry of auth.tokens that accepts it for principal. The token is shown
// to its holder once; the config keeps only its hash.
func NewToken(principal string) (token string, entry Token, err error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Token{}, err
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	entry, err = NewEntry(principal, token)
	if err != nil {
		return "", Token{}, err
	}
	return token, entry, nil
}

// NewEntry returns the entry of auth.tokens that accepts token for
// principal, for a token made elsewhere; it must be random and long.
func NewEntry(principal, token string) (Token, error) {
	if principal == "" || utf8.RuneCountInString(principal) > MaxPrincipalLen || strings.ContainsFunc(principal, unicode.IsControl) {
		return Token{}, fmt.Errorf("auth: a principal has 1 to %d characters, none of them control characters", MaxPrincipalLen)
	}
	if token == "" {
		return Token{}, fmt.Errorf("auth: an empty token")
	}
	return Token{Principal: principal, SHA256: HashToken(token)}, nil
}

// HashToken returns what auth.tokens stores of token: "sha256:" and its
// SHA-256 in lower-case hex. An unsalted hash is safe only for random
// tokens of high entropy, such as [NewToken] makes.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// staticTokens are the configured tokens' hashes and principals.
type staticTokens struct {
	sums       [][sha256.Size]byte
	principals []*identity
	// compare is subtle.ConstantTimeCompare; the tests count its calls.
	compare func(a, b []byte) int
}

func newStaticTokens(tokens []Token) (*staticTokens, error) {
	s := &staticTokens{compare: subtle.ConstantTimeCompare}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range tokens {
		h, ok := strings.CutPrefix(t.SHA256, "sha256:")
		raw, err := hex.DecodeString(h)
		if !ok || err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("auth: tokens[%d]: sha256 is not sha256: and 64 hexadecimal digits", i)
		}
		if t.Principal == "" || utf8.RuneCountInString(t.Principal) > MaxPrincipalLen || strings.ContainsFunc(t.Principal, unicode.IsControl) {
			return nil, fmt.Errorf("auth: tokens[%d]: a principal has 1 to %d characters, none of them control characters", i, MaxPrincipalLen)
		}
		sum := [sha256.Size]byte(raw)
		if seen[sum] {
			return nil, fmt.Errorf("auth: tokens[%d]: the same token as an earlier one", i)
		}
		seen[sum] = true
		p := &Principal{Name: t.Principal, Method: MethodToken}
		s.sums = append(s.sums, sum)
		s.principals = append(s.principals, &identity{p: p, info: tokenInfo(p)})
	}
	return s, nil
}

// match returns the identity of token, or nil. It hashes token and
// compares the hash with every stored one in constant time, whichever
// matches and whether any does, so that the time taken tells nothing of
// the stored hashes.
func (s *staticTokens) match(token string) *identity {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range s.sums {
		found = subtle.ConstantTimeSelect(s.compare(sum[:], s.sums[i][:]), i, found)
	}
	if found < 0 {
		return nil
	}
	return s.principals[found]
}
