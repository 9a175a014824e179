package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKeyRotation follows an issuer that replaces its key: a token signed
// with the new key makes the gateway fetch the keys again (once the bound
// allows), and the old key is then gone.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{JWKSMinInterval: time.Minute}, key("rsa"))
	old := sign(t, key("rsa"), is.claims(g.resource))
	if r := g.get(t, bearer(old)); r.status != 200 {
		t.Fatalf("old key: %d %q", r.status, r.challenge)
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches of the keys, want 1", n)
	}

	is.publish(key("rsa2"), key("ed"))
	fresh := sign(t, key("rsa2"), is.claims(g.resource))
	// Within a minute of the last fetch, an unknown kid fetches nothing.
	g.clock.Advance(59 * time.Second)
	if r := g.get(t, bearer(fresh)); r.status != 401 || !strings.Contains(r.challenge, "unknown signing key") {
		t.Errorf("new key within the bound: %d %q", r.status, r.challenge)
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Errorf("%d fetches, want still 1", n)
	}
	// After it, the unknown kid fetches the keys once, and the token is good.
	g.clock.Advance(2 * time.Second)
	if r := g.get(t, bearer(fresh)); r.status != 200 || r.seen.Principal != "alice" {
		t.Errorf("new key: %d %q", r.status, r.challenge)
	}
	if r := g.get(t, bearer(sign(t, key("ed"), is.claims(g.resource)))); r.status != 200 {
		t.Errorf("second new key: %d %q", r.status, r.challenge)
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
	// The old key was withdrawn: its tokens are refused.
	if r := g.get(t, bearer(old)); r.status != 401 || !strings.Contains(r.challenge, "unknown signing key") {
		t.Errorf("withdrawn key: %d %q", r.status, r.challenge)
	}
	// A token under a published kid but signed by another key is refused.
	if r := g.get(t, bearer(sign(t, key("rogue"), is.claims(g.resource)))); r.status != 401 {
		t.Errorf("rogue key with a known kid: %d", r.status)
	}
}

// TestUnknownKidFlood sends many tokens with key ids the issuer never
// published, concurrently and then one after another: the keys are
// fetched once per jwksMinInterval at most.
func TestUnknownKidFlood(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{}, key("ed"))
	if r := g.get(t, bearer(sign(t, key("ed"), is.claims(g.resource)))); r.status != 200 {
		t.Fatalf("%d %q", r.status, r.challenge)
	}
	flood := func(n int, concurrent bool) {
		var wg sync.WaitGroup
		statuses := make([]int, n)
		for i := range n {
			k := key("rogueEd")
			k.kid = "flood-" + strconv.Itoa(i)
			tok := sign(t, k, is.claims(g.resource))
			req := func() { statuses[i] = g.get(t, bearer(tok)).status }
			if concurrent {
				wg.Go(req)
			} else {
				req()
			}
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusUnauthorized {
				t.Errorf("token %d: %d", i, s)
			}
		}
	}

	flood(100, true)
	flood(50, false)
	if n := is.jwksFetches.Load(); n != 1 {
		t.Errorf("%d fetches after 150 unknown kids within the bound, want 1", n)
	}
	g.clock.Advance(DefaultJWKSMinInterval)
	flood(100, true)
	flood(50, false)
	if n := is.jwksFetches.Load(); n != 2 {
		t.Errorf("%d fetches after the bound passed once, want 2", n)
	}
	g.clock.Advance(DefaultJWKSMinInterval)
	flood(20, true)
	if n := is.jwksFetches.Load(); n != 3 {
		t.Errorf("%d fetches after the bound passed twice, want 3", n)
	}
	if n := is.metaFetches.Load(); n != 1 {
		t.Errorf("%d fetches of the metadata, want 1 (jwks_uri is kept)", n)
	}
}

// TestKeyRefresh checks that keys older than jwksRefresh are fetched
// again, and that keys which cannot be fetched again are still used.
func TestKeyRefresh(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{JWKSRefresh: 10 * time.Minute}, key("ec"))
	tok := sign(t, key("ec"), is.claims(g.resource))
	for range 3 {
		if r := g.get(t, bearer(tok)); r.status != 200 {
			t.Fatalf("%d %q", r.status, r.challenge)
		}
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	g.clock.Advance(11 * time.Minute)
	if r := g.get(t, bearer(tok)); r.status != 200 {
		t.Fatalf("%d %q", r.status, r.challenge)
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Errorf("%d fetches after jwksRefresh, want 2", n)
	}
	// The issuer fails: the stale keys still verify, and the next fetch
	// waits for the bound.
	is.down.Store(true)
	g.clock.Advance(11 * time.Minute)
	for range 3 {
		if r := g.get(t, bearer(tok)); r.status != 200 {
			t.Errorf("issuer down, stale keys: %d %q", r.status, r.challenge)
		}
	}
	if n := is.jwksFetches.Load(); n != 3 {
		t.Errorf("%d fetches, want 3", n)
	}
}

// TestKeysUnavailable checks the answer when the keys were never fetched:
// 503 with Retry-After (not a 401 that would send the client to log in
// again), until the issuer answers and the bound allows a fetch.
func TestKeysUnavailable(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("rsa"))
	is.down.Store(true)
	g := newGateway(t, Options{OAuth: &OAuth{Issuer: is.srv.URL}, Logger: discardLogger()})
	tok := sign(t, key("rsa"), is.claims(g.resource))
	r := g.get(t, bearer(tok))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "30" || r.challenge != "" {
		t.Errorf("issuer down: %d Retry-After %q %q %s", r.status, r.header.Get("Retry-After"), r.challenge, r.body)
	}
	is.down.Store(false)
	g.clock.Advance(20 * time.Second)
	if r := g.get(t, bearer(tok)); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "10" {
		t.Errorf("within the bound: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	g.clock.Advance(10 * time.Second)
	if r := g.get(t, bearer(tok)); r.status != 200 {
		t.Errorf("issuer back: %d %q", r.status, r.challenge)
	}
	if n := is.metaFetches.Load(); n != 2 {
		t.Errorf("%d metadata fetches, want 2", n)
	}
}

// TestDiscovery checks how the keys are found: the metadata URLs of the
// MCP authorization spec in order, the issuer in the document checked,
// and a configured jwksUrl used without discovery.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	if got, _ := metadataURLs("https://a.example.com/tenant1/"); strings.Join(got, " ") !=
		"https://a.example.com/.well-known/oauth-authorization-server/tenant1 https://a.example.com/.well-known/openid-configuration/tenant1 https://a.example.com/tenant1/.well-known/openid-configuration" {
		t.Errorf("with a path: %q", got)
	}
	if got, _ := metadataURLs("https://a.example.com"); strings.Join(got, " ") !=
		"https://a.example.com/.well-known/oauth-authorization-server https://a.example.com/.well-known/openid-configuration" {
		t.Errorf("without a path: %q", got)
	}

	// An issuer with a path whose metadata is only at the OpenID Connect
	// URL appended to it, and a decoy that names another issuer.
	var hits []string
	var mu sync.Mutex
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss := srv.URL + "/realms/team"
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/.well-known/openid-configuration/realms/team":
			writeJSON(w, map[string]any{"issuer": srv.URL + "/realms/other", "jwks_uri": srv.URL + "/decoy"})
		case "/realms/team/.well-known/openid-configuration":
			writeJSON(w, map[string]any{"issuer": iss, "jwks_uri": srv.URL + "/realms/team/certs"})
		case "/realms/team/certs":
			writeJSON(w, map[string]any{"keys": []any{jwkOf(key("ed"))}})
		default:
			http.NotFound(w, r)
		}
	})
	g := newGateway(t, Options{OAuth: &OAuth{Issuer: iss}})
	claims := jwtClaims(iss, g.resource)
	if r := g.get(t, bearer(sign(t, key("ed"), claims))); r.status != 200 {
		t.Fatalf("%d %q %s", r.status, r.challenge, r.body)
	}
	want := "/.well-known/oauth-authorization-server/realms/team /.well-known/openid-configuration/realms/team /realms/team/.well-known/openid-configuration /realms/team/certs"
	if got := strings.Join(hits, " "); got != want {
		t.Errorf("requests %s\nwant %s", got, want)
	}

	// jwksUrl set: no metadata is read.
	hits = nil
	g = newGateway(t, Options{OAuth: &OAuth{Issuer: iss, JWKSURL: srv.URL + "/realms/team/certs"}})
	if r := g.get(t, bearer(sign(t, key("ed"), jwtClaims(iss, g.resource)))); r.status != 200 {
		t.Fatalf("%d %q", r.status, r.challenge)
	}
	if got := strings.Join(hits, " "); got != "/realms/team/certs" {
		t.Errorf("requests with jwksUrl: %s", got)
	}
}

func jwtClaims(iss, aud string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": iss, "aud": aud, "sub": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// TestParseJWKS checks what a key set may hold: usable keys are kept, the
// rest skipped.
func TestParseJWKS(t *testing.T) {
	t.Parallel()
	ed := jwkOf(key("ed"))
	rsaJWK := jwkOf(key("rsa"))
	ec := jwkOf(key("ec"))
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range m {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	small := with(rsaJWK, "n", rsaJWK["n"].(string)[:170]) // 1020 bits
	for _, tc := range []struct {
		name string
		keys []any
		want int // usable keys; 0 means an error
	}{
		{"three", []any{ed, rsaJWK, ec}, 3},
		{"encryption key", []any{with(ed, "use", "enc"), ec}, 1},
		{"key_ops without verify", []any{with(ed, "key_ops", []string{"encrypt"}), ec}, 1},
		{"symmetric key", []any{map[string]any{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}}, 0},
		{"small RSA", []any{small}, 0},
		{"even exponent", []any{with(rsaJWK, "e", "Ag")}, 0},
		{"EC point off the curve", []any{with(ec, "y", ec["x"])}, 0},
		{"EC coordinate short", []any{with(ec, "x", ec["x"].(string)[:40])}, 0},
		{"unknown curve", []any{with(ec, "crv", "P-192")}, 0},
		{"Ed448", []any{with(ed, "crv", "Ed448")}, 0},
		{"padded base64", []any{with(ed, "x", ed["x"].(string)+"=")}, 0},
		{"alg that does not fit", []any{with(ed, "alg", "RS256")}, 0},
		{"no alg", []any{with(ec, "alg", nil)}, 1},
		{"a key of the wrong shape", []any{"x", 1, ed}, 1},
	} {
		data := []byte(mustJSON(map[string]any{"keys": tc.keys}))
		keys, err := parseJWKS(data)
		if len(keys) != tc.want || (err == nil) != (tc.want > 0) {
			t.Errorf("%s: %d keys, %v; want %d", tc.name, len(keys), err, tc.want)
		}
	}
	many := make([]any, maxKeys+10)
	for i := range many {
		many[i] = with(ed, "kid", fmt.Sprint(i))
	}
	if keys, _ := parseJWKS([]byte(mustJSON(map[string]any{"keys": many}))); len(keys) != maxKeys {
		t.Errorf("%d keys kept of %d, want %d", len(keys), len(many), maxKeys)
	}
	for _, bad := range []string{"", "null", "[]", `{"keys": {}}`, `{"keys": []}`} {
		if _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestKidlessTokens checks tokens without a kid: tried against the keys
// of their algorithm, up to a few.
func TestKidlessTokens(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{}, key("ed"), key("rsa"))
	k := key("ed")
	k.kid = ""
	if r := g.get(t, bearer(sign(t, k, is.claims(g.resource)))); r.status != 200 {
		t.Errorf("no kid, one key of the algorithm: %d %q", r.status, r.challenge)
	}
	many := []testKey{key("rsa")}
	for i := range maxKidlessKeys {
		e := key("ed2")
		e.kid = "ed-" + strconv.Itoa(i)
		many = append(many, e)
	}
	many = append(many, key("ed"))
	is.publish(many...)
	g.clock.Advance(2 * DefaultJWKSRefresh)
	if r := g.get(t, bearer(sign(t, k, is.claims(g.resource)))); r.status != 401 || !strings.Contains(r.challenge, "no key id") {
		t.Errorf("no kid, %d keys of the algorithm: %d %q", maxKidlessKeys+1, r.status, r.challenge)
	}
}

// TestParseJWKSSkipsBadKeys puts one bad key before a good one: each key
// is parsed on its own, so the bad one is skipped and the good one kept.
func TestParseJWKSSkipsBadKeys(t *testing.T) {
	t.Parallel()
	enc := base64.RawURLEncoding.EncodeToString
	ed, ec := jwkOf(key("ed")), jwkOf(key("ec"))
	edPub := key("ed").signer.Public().(ed25519.PublicKey)
	ecD, err := key("ec").signer.(*ecdsa.PrivateKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ecCert := selfSigned(t, key("ec").signer)
	for _, tc := range []struct {
		name string
		bad  map[string]any
		want []string // kids kept, the good key's last
	}{
		{"EC point off the curve", jwkWith(ec, "y", ec["x"]), nil},
		{"EC coordinate of another curve", jwkWith(ec, "crv", "P-384"), nil},
		{"RSA of 1020 bits", jwkWith(jwkOf(key("rsa")), "n", jwkOf(key("rsa"))["n"].(string)[:170]), nil},
		{"RSA of 8193 bits", jwkWith(jwkOf(key("rsa")), "n", enc(append([]byte{1}, make([]byte, 1024)...))), nil},
		{"Ed25519 of 31 bytes", jwkWith(ed, "x", enc(edPub[:31])), nil},
		{"Ed25519 of 33 bytes", jwkWith(ed, "x", enc(append(edPub, 0))), nil},
		{"Ed25519 private key", jwkWith(ed, "d", enc(key("ed").signer.(ed25519.PrivateKey).Seed())), nil},
		{"EC private key", jwkWith(ec, "d", enc(ecD)), nil},
		{"no kty", jwkWith(ec, "kty", nil), nil},
		{"x5c of another key", jwkWith(ed, "x5c", []string{ecCert}), nil},
		{"x5c of its key", jwkWith(ec, "x5c", []string{ecCert}), []string{"ec-1"}},
	} {
		good := jwkOf(key("rsa2"))
		keys, err := parseJWKS([]byte(mustJSON(map[string]any{"keys": []any{tc.bad, good}})))
		var kids []string
		for _, k := range keys {
			kids = append(kids, k.kid)
		}
		if want := append(tc.want, "rsa-2"); err != nil || !slices.Equal(kids, want) {
			t.Errorf("%s: kept %q, %v; want %q", tc.name, kids, err, want)
		}
	}
}

// jwkWith returns a copy of m with its member k set to v, or removed when
// v is nil.
func jwkWith(m map[string]any, k string, v any) map[string]any {
	out := maps.Clone(m)
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// selfSigned returns a self-signed certificate of s's key, as x5c holds it.
func selfSigned(t *testing.T, s crypto.Signer) string {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, s.Public(), s)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}
