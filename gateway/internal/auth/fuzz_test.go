package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzBearer sends arbitrary Authorization headers through the middleware
// of a gateway with static tokens and OAuth: it never panics, answers
// with one of the expected statuses and a short body, and accepts only a
// configured static token or a JWT whose signature, checked here with the
// standard library alone, is one of the issuer's keys' under an allowed
// algorithm. An unsigned or re-signed token never passes.
//
//	go test -run '^$' -fuzz FuzzBearer -fuzztime 60s ./gateway/auth/
func FuzzBearer(f *testing.F) {
	keys := []testKey{key("rsa"), key("ec"), key("ed")}
	is := newIssuer(f, keys...)
	c, tokens := staticConfig(f, 2)
	c.OAuth = &OAuth{Issuer: is.srv.URL, Resource: "https://mcp.example.com/mcp"}
	c.Logger = discardLogger()
	a, err := New(&c)
	if err != nil {
		f.Fatal(err)
	}
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	claims := is.claims("https://mcp.example.com/mcp")
	for _, k := range keys {
		good := sign(f, k, claims)
		f.Add(bearer(good))
		parts := strings.Split(good, ".")
		f.Add(bearer(parts[0] + "." + parts[1] + "."))
		none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + k.kid + `"}`))
		f.Add(bearer(none + "." + parts[1] + "."))
		f.Add(bearer(none + "." + parts[1] + "." + parts[2]))
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	hs.Header["kid"] = "rsa-1"
	hsTok, _ := hs.SignedString([]byte(jwkOf(key("rsa"))["n"].(string)))
	f.Add(bearer(hsTok))
	f.Add(bearer(tokens[0]))
	f.Add("Bearer")
	f.Add("")
	f.Add("bearer a.b.c")
	f.Add("Basic YTpi")

	published := map[string]testKey{}
	for _, k := range keys {
		published[k.kid] = k
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
		req.Header.Set("Authorization", header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !slices.Contains([]int{200, 400, 401, 403, 503}, rec.Code) || rec.Body.Len() > 512 {
			t.Fatalf("%q: %d with %d bytes", header, rec.Code, rec.Body.Len())
		}
		if rec.Code != 200 {
			return
		}
		token := strings.Fields(header)[1]
		if slices.Contains(tokens, token) {
			return
		}
		if !signedBy(token, published) {
			t.Fatalf("accepted a token that no published key signed: %q", header)
		}
	})
}

// signedBy checks a JWT's signature with the standard library: its alg is
// RS256, ES256 or EdDSA and the key its kid names verifies it.
func signedBy(token string, keys map[string]testKey) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	head, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	var h struct{ Alg, Kid string }
	if err1 != nil || err2 != nil || json.Unmarshal(head, &h) != nil {
		return false
	}
	k, ok := keys[h.Kid]
	if !ok || k.alg != h.Alg {
		return false
	}
	input := []byte(parts[0] + "." + parts[1])
	sum := sha256.Sum256(input)
	switch pub := k.signer.Public().(type) {
	case *rsa.PublicKey:
		return h.Alg == "RS256" && rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
	case *ecdsa.PublicKey:
		return h.Alg == "ES256" && len(sig) == 64 && ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	case ed25519.PublicKey:
		return h.Alg == "EdDSA" && ed25519.Verify(pub, input, sig)
	}
	return false
}

// FuzzJWKS feeds the key set parser arbitrary documents: it never panics,
// and every key it keeps is one a signature can be checked with.
//
//	go test -run '^$' -fuzz FuzzJWKS -fuzztime 60s ./gateway/auth/
func FuzzJWKS(f *testing.F) {
	f.Add([]byte(mustJSON(map[string]any{"keys": []any{jwkOf(key("rsa")), jwkOf(key("ec")), jwkOf(key("ed")), jwkOf(key("ec384"))}})))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"EC","crv":"P-256","x":"","y":""},{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseJWKS(data)
		if (err == nil) != (len(keys) > 0) || len(keys) > maxKeys {
			t.Fatalf("%d keys, %v", len(keys), err)
		}
		for _, k := range keys {
			switch pub := k.key.(type) {
			case *rsa.PublicKey:
				if b := pub.N.BitLen(); b < minRSABits || b > maxRSABits || pub.E < 3 || pub.E%2 == 0 {
					t.Fatalf("RSA key of %d bits, e %d", b, pub.E)
				}
			case *ecdsa.PublicKey:
				if _, err := pub.Bytes(); err != nil {
					t.Fatalf("EC key: %v", err)
				}
			case ed25519.PublicKey:
				if len(pub) != ed25519.PublicKeySize {
					t.Fatalf("Ed25519 key of %d bytes", len(pub))
				}
			default:
				t.Fatalf("a key of type %T", pub)
			}
			if !slices.ContainsFunc([]string{"RS256", "PS512", "ES256", "ES384", "ES512", "EdDSA"}, k.fits) {
				t.Fatalf("a key no algorithm fits: %+v", k)
			}
		}
	})
}
