package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

// Bounds on what the issuer serves.
const (
	maxDocBytes    = 1 << 20 // a metadata document or a key set
	maxKeys        = 64      // signature keys kept of one key set
	minRSABits     = 2048
	maxRSABits     = 8192
	maxKidlessKeys = 4 // keys tried for a token without a kid
)

// Errors of key lookup.
var (
	errUnknownKey  = errors.New("no key of the issuer has the token's key id and algorithm")
	errKeysMissing = errors.New("the issuer's signing keys are unavailable")
	errManyKeys    = errors.New("the token has no key id and the issuer has several keys for its algorithm")
)

// jwk is one usable signature key of a key set.
type jwk struct {
	kid string
	alg string // the key's own alg; "" when it names none
	key crypto.PublicKey
}

// fits reports whether k may verify a signature made with alg.
func (k *jwk) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return alg == "ES256" && key.Curve == elliptic.P256() ||
			alg == "ES384" && key.Curve == elliptic.P384() ||
			alg == "ES512" && key.Curve == elliptic.P521()
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// parseJWKS reads a JWK Set and returns the signature keys it can use.
// Each key is parsed on its own, so a malformed one is skipped rather than
// failing the set; a set with no usable key is an error.
func parseJWKS(data []byte) ([]*jwk, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("the key set is not a JSON object with keys")
	}
	var keys []*jwk
	for _, raw := range set.Keys {
		if k := signatureKey(raw); k != nil {
			keys = append(keys, k)
			if len(keys) == maxKeys {
				break
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the key set has no usable signature key among its %d", len(set.Keys))
	}
	return keys, nil
}

// jwkMembers are the members of a JWK that go-jose does not keep.
type jwkMembers struct {
	KeyOps []string `json:"key_ops"`
	X      string   `json:"x"`
}

// signatureKey returns the JWK raw as a usable signature key, or nil.
// go-jose parses it (RFC 7517, RFC 7518, RFC 8037) and checks that an EC
// point is on its curve; on top, the key must be for signatures, public
// (a published private key is compromised), RSA of 2048 to 8192 bits with
// an odd exponent, EC on P-256, P-384 or P-521, or Ed25519, and fit its
// own alg.
func signatureKey(raw []byte) *jwk {
	var parsed jose.JSONWebKey
	var m jwkMembers
	if parsed.UnmarshalJSON(raw) != nil || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	if parsed.Use != "" && parsed.Use != "sig" || m.KeyOps != nil && !slices.Contains(m.KeyOps, "verify") {
		return nil
	}
	switch key := parsed.Key.(type) {
	case *rsa.PublicKey:
		if bits := key.N.BitLen(); bits < minRSABits || bits > maxRSABits || key.E < 3 || key.E%2 == 0 {
			return nil
		}
	case *ecdsa.PublicKey:
		// go-jose accepts only the three curves, with the point on it.
	case ed25519.PublicKey:
		// go-jose pads or cuts x to 32 bytes: a key of another size is malformed.
		if len(m.X) != base64.RawURLEncoding.EncodedLen(ed25519.PublicKeySize) {
			return nil
		}
	default:
		return nil // symmetric, private, or of a type go-jose does not parse
	}
	k := &jwk{kid: parsed.KeyID, alg: parsed.Algorithm, key: parsed.Key}
	if k.alg != "" && !k.fits(k.alg) {
		return nil // a key whose own alg cannot use it
	}
	return k
}

// keySnapshot is one fetched key set.
type keySnapshot struct {
	keys    []*jwk
	fetched time.Time
}

// find returns the keys that may verify a token with kid and alg.
func (s *keySnapshot) find(kid, alg string) ([]any, error) {
	var out []any
	for _, k := range s.keys {
		if k.kid == kid && k.fits(alg) || kid == "" && k.fits(alg) {
			out = append(out, k.key)
		}
	}
	switch {
	case len(out) == 0:
		return nil, errUnknownKey
	case kid == "" && len(out) > maxKidlessKeys:
		return nil, errManyKeys
	}
	return out, nil
}

// keySet is the issuer's signing keys: fetched at first use, fetched again
// when they are older than refresh or a token names a key id they lack,
// and never more often than once per minInterval, however many tokens ask.
// One fetch runs at a time; requests that need it wait for it.
type keySet struct {
	client      *http.Client
	issuer      string
	configured  string // jwksUrl from the config; "" means discover it
	refresh     time.Duration
	minInterval time.Duration
	timeout     time.Duration
	now         func() time.Time
	log         *slog.Logger

	snap atomic.Pointer[keySnapshot]

	mu          sync.Mutex
	inflight    chan struct{} // closed when the running fetch ends
	lastAttempt time.Time
	discovered  string // jwks_uri of the issuer's metadata, once found
}

// lookup returns the keys that may verify a token with kid and alg,
// fetching the key set first when it is missing, stale, or lacks kid (and
// the bound allows). A key set that cannot be fetched is used as it was.
// It also returns the snapshot the keys come from.
func (ks *keySet) lookup(ctx context.Context, kid, alg string) ([]any, *keySnapshot, error) {
	if snap := ks.fresh(); snap != nil {
		if keys, err := snap.find(kid, alg); err == nil {
			return keys, snap, nil
		}
	}
	ks.fetch(ctx)
	snap := ks.snap.Load()
	if snap == nil {
		return nil, nil, errKeysMissing
	}
	keys, err := snap.find(kid, alg)
	return keys, snap, err
}

// fresh returns the key set when it is younger than refresh, or nil.
func (ks *keySet) fresh() *keySnapshot {
	if snap := ks.snap.Load(); snap != nil && ks.now().Sub(snap.fetched) < ks.refresh {
		return snap
	}
	return nil
}

// nextFetch returns how long until a fetch is allowed again.
func (ks *keySet) nextFetch() time.Duration {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return max(0, ks.minInterval-ks.now().Sub(ks.lastAttempt))
}

// fetch fetches the key set, or waits for the fetch under way, or does
// nothing when the last one started less than minInterval ago.
func (ks *keySet) fetch(ctx context.Context) {
	ks.mu.Lock()
	if ch := ks.inflight; ch != nil {
		ks.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	if now := ks.now(); !ks.lastAttempt.IsZero() && now.Sub(ks.lastAttempt) < ks.minInterval {
		ks.mu.Unlock()
		return
	} else {
		ks.lastAttempt = now
	}
	ch := make(chan struct{})
	ks.inflight = ch
	ks.mu.Unlock()

	// The fetch serves every waiting request: it outlives this one's
	// cancellation, within its own timeout.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ks.timeout)
	keys, err := ks.download(fctx)
	cancel()

	ks.mu.Lock()
	if err != nil {
		ks.log.Warn("auth: fetching the issuer's signing keys", "issuer", ks.issuer, "err", err)
	} else {
		ks.snap.Store(&keySnapshot{keys: keys, fetched: ks.now()})
	}
	ks.inflight = nil
	close(ch)
	ks.mu.Unlock()
}

// download fetches and parses the key set. Only the one running fetch
// calls it.
func (ks *keySet) download(ctx context.Context) ([]*jwk, error) {
	u := ks.configured
	if u == "" {
		if ks.discovered == "" {
			d, err := ks.discover(ctx)
			if err != nil {
				return nil, err
			}
			ks.discovered = d
		}
		u = ks.discovered
	}
	data, err := ks.get(ctx, u)
	if err != nil {
		ks.discovered = "" // find it again next time: the metadata may have moved
		return nil, fmt.Errorf("key set: %w", err)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	return keys, nil
}

// metadataURLs returns where the issuer's metadata may be, in the order of
// the MCP authorization spec: RFC 8414 with the well-known path inserted,
// then OpenID Connect discovery inserted, then appended.
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}, nil
}

// discover returns the jwks_uri of the issuer's metadata, from the first
// document found whose issuer is the configured one.
func (ks *keySet) discover(ctx context.Context) (string, error) {
	urls, err := metadataURLs(ks.issuer)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, u := range urls {
		data, err := ks.get(ctx, u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		switch {
		case json.Unmarshal(data, &meta) != nil:
			errs = append(errs, fmt.Errorf("%s: not a JSON metadata document", u))
		case meta.Issuer != ks.issuer:
			// RFC 8414 section 3.3: such metadata must not be used.
			errs = append(errs, fmt.Errorf("%s: the document is another issuer's", u))
		case !secureURL(meta.JWKSURI):
			errs = append(errs, fmt.Errorf("%s: jwks_uri is not an https URL", u))
		default:
			return meta.JWKSURI, nil
		}
	}
	return "", fmt.Errorf("issuer metadata: %w", errors.Join(errs...))
}

// get fetches a JSON document of at most maxDocBytes. Errors name the URL
// and the status, never the body.
func (ks *keySet) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(data) > maxDocBytes {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", u, maxDocBytes)
	}
	return data, nil
}

// secureURL reports whether s is an https URL, or an http one on a
// loopback host.
func secureURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http" && loopback.Is(u.Host))
}

// newHTTPClient is the client for the issuer when Options gives none: it
// follows at most 3 redirects, and never to a URL secureURL refuses.
func newHTTPClient() *http.Client {
	return &http.Client{
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			if !secureURL(req.URL.String()) {
				return errors.New("redirected to a URL that is not https")
			}
			return nil
		},
	}
}
