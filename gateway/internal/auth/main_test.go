package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey is a signing key of the test issuer.
type testKey struct {
	kid    string
	alg    string
	signer crypto.Signer
}

// Keys are made once per test binary: RSA keys take a while.
var testKeys = sync.OnceValue(func() map[string]testKey {
	rsaKey := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	}
	ecKey := func(c elliptic.Curve) *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	edKey := func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	return map[string]testKey{
		"rsa":     {"rsa-1", "RS256", rsaKey()},
		"rsa2":    {"rsa-2", "RS256", rsaKey()},
		"ec":      {"ec-1", "ES256", ecKey(elliptic.P256())},
		"ec384":   {"ec-384", "ES384", ecKey(elliptic.P384())},
		"ed":      {"ed-1", "EdDSA", edKey()},
		"ed2":     {"ed-2", "EdDSA", edKey()},
		"rogue":   {"rsa-1", "RS256", rsaKey()}, // the kid of "rsa", another key: never published
		"rogueEd": {"ed-9", "EdDSA", edKey()},
	}
})

func key(name string) testKey { return testKeys()[name] }

// jwkOf returns k's public key as a JWK.
func jwkOf(k testKey) map[string]any {
	enc := base64.RawURLEncoding.EncodeToString
	m := map[string]any{"kid": k.kid, "use": "sig", "alg": k.alg}
	switch pub := k.signer.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", enc(pub.N.Bytes()), enc([]byte{1, 0, 1})
	case *ecdsa.PublicKey:
		b, err := pub.Bytes()
		if err != nil {
			panic(err)
		}
		size := (len(b) - 1) / 2
		m["kty"], m["crv"], m["x"], m["y"] = "EC", pub.Curve.Params().Name, enc(b[1:1+size]), enc(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", enc(pub)
	}
	return m
}

// issuer is an authorization server: it serves its metadata (RFC 8414)
// and its keys, and signs tokens.
type issuer struct {
	srv         *httptest.Server
	mu          sync.Mutex
	keys        []testKey
	jwksFetches atomic.Int64
	metaFetches atomic.Int64
	down        atomic.Bool // every request fails with 500
}

func newIssuer(t testing.TB, keys ...testKey) *issuer {
	is := &issuer{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		is.metaFetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		is.mu.Lock()
		set := []any{}
		for _, k := range is.keys {
			set = append(set, jwkOf(k))
		}
		is.mu.Unlock()
		writeJSON(w, map[string]any{"keys": set})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// publish replaces the keys the issuer serves.
func (is *issuer) publish(keys ...testKey) {
	is.mu.Lock()
	is.keys = keys
	is.mu.Unlock()
}

// claims returns valid claims for the resource: sub alice, an hour to go.
func (is *issuer) claims(resource string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": is.srv.URL, "sub": "alice", "aud": resource,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": "mcp:tools files:read",
	}
}

// sign signs claims with k.
func sign(t testing.TB, k testKey, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.alg), claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clock is a settable time for the key set's bounds.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// gateway is a resource server under test: the middleware in front of a
// handler that reports what it got, and the metadata.
type gateway struct {
	srv      *httptest.Server
	a        *Authenticator
	resource string // srv.URL + "/mcp"
	clock    *clock
}

// seen is what the handler behind the middleware reports.
type seen struct {
	Principal     string   `json:"principal"`
	Method        Method   `json:"method"`
	Scopes        []string `json:"scopes"`
	UserID        string   `json:"userID"`        // of the SDK's TokenInfo
	Authorization string   `json:"authorization"` // the header as the handler sees it
}

// newGateway starts a resource server with c, whose oauth resource (when
// c has oauth and leaves it empty) is the server's /mcp.
func newGateway(t testing.TB, c Options) *gateway {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	g := &gateway{srv: srv, resource: "http://" + srv.Listener.Addr().String() + "/mcp", clock: newClock()}
	if c.OAuth != nil && c.OAuth.Resource == "" {
		o := *c.OAuth
		o.Resource = g.resource
		c.OAuth = &o
	}
	a, err := New(&c)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	a.now = g.clock.Now
	g.a = a
	mux := http.NewServeMux()
	a.Handle(mux)
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := FromContext(r.Context())
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		s := seen{Principal: p.String(), Method: p.Method, Scopes: p.Scopes, Authorization: r.Header.Get("Authorization")}
		if ti := sdkTokenInfo(r); ti != nil {
			s.UserID = ti.UserID
		}
		writeJSON(w, s)
	})))
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return g
}

// reply is an HTTP response as the tests look at it.
type reply struct {
	status    int
	challenge string // WWW-Authenticate
	body      string
	seen      seen
	header    http.Header
}

// get requests the gateway's /mcp with the given Authorization headers.
func (g *gateway) get(t testing.TB, authorization ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), body: string(body), header: resp.Header}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, &r.seen); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// bearer returns an Authorization header value.
func bearer(token string) string { return "Bearer " + token }

func sdkTokenInfo(r *http.Request) *sdkauth.TokenInfo {
	return sdkauth.TokenInfoFromContext(r.Context())
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
