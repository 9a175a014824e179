package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxNameBytes bounds a principal's name taken from a claim.
const maxNameBytes = 1024

// jwtVerifier checks OAuth access tokens: JWTs signed by the issuer.
type jwtVerifier struct {
	parser   *jwt.Parser
	keys     *keySet
	audience []string
	claim    string
	skew     time.Duration
	now      func() time.Time
	cache    tokenCache
}

// verify checks a JWT's signature (with an allowed algorithm and a key of
// the issuer), its issuer, audience, exp (required), nbf and iat, and
// returns its principal. A token it accepted before under the same, fresh
// key set is accepted again until it expires, without the signature
// check: clients send one token with many requests.
func (v *jwtVerifier) verify(ctx context.Context, raw string) (*identity, *failure) {
	sum := sha256.Sum256([]byte(raw))
	if snap := v.keys.fresh(); snap != nil {
		if id := v.cache.get(sum, snap); id != nil && !v.now().After(id.p.Expires.Add(v.skew)) {
			return id, nil
		}
	}
	var used *keySnapshot
	claims := jwt.MapClaims{}
	keyfunc := func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errCrit // RFC 7515 section 4.1.11: no extension is understood
		}
		kid, ok := t.Header["kid"].(string)
		if !ok && t.Header["kid"] != nil {
			return nil, errUnknownKey
		}
		keys, snap, err := v.keys.lookup(ctx, kid, t.Method.Alg())
		if err != nil {
			return nil, err
		}
		used = snap
		if len(keys) == 1 {
			return keys[0], nil
		}
		set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, len(keys))}
		for i, k := range keys {
			set.Keys[i] = k
		}
		return set, nil
	}
	if _, err := v.parser.ParseWithClaims(raw, claims, keyfunc); err != nil {
		return nil, jwtFailure(err)
	}
	aud, err := claims.GetAudience()
	if err != nil || !v.audienceOK(aud) {
		return nil, invalidToken("the token is not for this resource (aud)")
	}
	name, ok := claims[v.claim].(string)
	if !ok || name == "" || len(name) > maxNameBytes || strings.ContainsFunc(name, unicode.IsControl) {
		return nil, invalidToken("the token has no usable principal claim")
	}
	p := &Principal{Name: name, Method: MethodOAuth, Scopes: scopes(claims), Claims: claims}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		p.Expires = exp.Time
	}
	id := &identity{p: p, info: tokenInfo(p)}
	v.cache.put(sum, used, id)
	return id, nil
}

// maxCached bounds the tokens remembered as verified.
const maxCached = 4096

// tokenCache remembers the tokens verified under one key set, by their
// SHA-256. A new key set empties it, so a withdrawn key's tokens are
// checked again (and refused); so does reaching maxCached.
type tokenCache struct {
	mu   sync.Mutex
	snap *keySnapshot
	m    map[[sha256.Size]byte]*identity
}

func (c *tokenCache) get(sum [sha256.Size]byte, current *keySnapshot) *identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != current {
		return nil
	}
	return c.m[sum]
}

func (c *tokenCache) put(sum [sha256.Size]byte, snap *keySnapshot, id *identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap {
		if c.snap != nil && snap.fetched.Before(c.snap.fetched) {
			return // verified under a key set already replaced
		}
		c.snap, c.m = snap, make(map[[sha256.Size]byte]*identity)
	}
	if len(c.m) >= maxCached {
		clear(c.m)
	}
	c.m[sum] = id
}

func (v *jwtVerifier) audienceOK(aud []string) bool {
	for _, want := range v.audience {
		if oauthex.MatchesResource(aud, want) {
			return true
		}
	}
	return false
}

var errCrit = errors.New("the token has critical header extensions")

// jwtFailure says why a token was refused, in a few words for the client.
func jwtFailure(err error) *failure {
	switch {
	case errors.Is(err, errKeysMissing):
		return &failure{status: 503, desc: "the issuer's signing keys are unavailable"}
	case errors.Is(err, errUnknownKey):
		return invalidToken("unknown signing key")
	case errors.Is(err, errManyKeys):
		return invalidToken("the token has no key id (kid)")
	case errors.Is(err, errCrit):
		return invalidToken("unsupported critical header")
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalidToken("malformed token")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		if strings.Contains(err.Error(), "signing method") {
			return invalidToken("signature algorithm not allowed")
		}
		return invalidToken("invalid signature")
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalidToken("the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalidToken("the token is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return invalidToken("the token was issued in the future (iat)")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return invalidToken("the token is another issuer's (iss)")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return invalidToken("the token lacks a required claim (iss, exp)")
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return invalidToken("signature algorithm not allowed")
	}
	return invalidToken("invalid token")
}

// scopes returns the token's scopes: the scope claim (RFC 8693, RFC 9068,
// space-separated) or else scp (a list or a string, as some providers
// write it).
func scopes(claims jwt.MapClaims) []string {
	switch s := claims["scope"].(type) {
	case string:
		return strings.Fields(s)
	}
	switch s := claims["scp"].(type) {
	case string:
		return strings.Fields(s)
	case []any:
		out := make([]string, 0, len(s))
		for _, v := range s {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
