package auth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkMiddleware measures what authentication adds to a request: the
// middleware in front of a handler that does nothing, in process, with
// the keys already fetched. jwt/ALG/first verifies the signature on every
// request; jwt/ALG/again is a token the middleware has verified before,
// as when a client sends its token with each request.
//
//	go test -run '^$' -bench Middleware -benchmem -count 6 ./gateway/auth/
func BenchmarkMiddleware(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	run := func(b *testing.B, a *Authenticator, req *http.Request, forget bool) {
		h := a.Middleware(noop)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if forget { // every request verifies the signature
				a.jwt.cache.mu.Lock()
				a.jwt.cache.snap = nil
				a.jwt.cache.mu.Unlock()
			}
			h.ServeHTTP(rec, req)
		}
	}
	request := func(token string) *http.Request {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		return req
	}

	b.Run("anonymous", func(b *testing.B) {
		a, _ := New(nil)
		req := request("")
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
		run(b, a, req, false)
	})
	for _, n := range []int{1, 100} {
		b.Run("static/tokens="+map[int]string{1: "1", 100: "100"}[n], func(b *testing.B) {
			c, tokens := staticConfig(b, n)
			a, err := New(&c)
			if err != nil {
				b.Fatal(err)
			}
			run(b, a, request(tokens[n-1]), false)
		})
	}
	for _, name := range []string{"rsa", "ec", "ed"} {
		k := key(name)
		for _, first := range []bool{true, false} {
			name := "jwt/" + k.alg + "/first"
			if !first {
				name = "jwt/" + k.alg + "/again"
			}
			b.Run(name, func(b *testing.B) {
				is := newIssuer(b, k)
				resource := "https://mcp.example.com/mcp"
				a, err := New(&Options{OAuth: &OAuth{Issuer: is.srv.URL, Resource: resource}})
				if err != nil {
					b.Fatal(err)
				}
				run(b, a, request(sign(b, k, is.claims(resource))), first)
			})
		}
	}
}
