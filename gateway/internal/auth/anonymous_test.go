package auth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAnonymous checks serving without authentication: refused at start
// on a non-loopback address, and per request for a client that did not
// come through a loopback address or names another host.
func TestAnonymous(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.1.2.3:8080": false, "/run/preflight.sock": false,
	} {
		_, err := New(&Options{Addr: addr})
		if (err == nil) != ok {
			t.Errorf("New without auth on %q: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "without authentication") {
			t.Errorf("%q: %v", addr, err)
		}
	}

	g := newGateway(t, Options{})
	if !g.a.Anonymous() {
		t.Fatal("not anonymous")
	}
	// A token sent anyway is neither checked nor passed on.
	for _, h := range [][]string{nil, {"Bearer whatever"}} {
		r := g.get(t, h...)
		if r.status != 200 || r.seen.Method != MethodAnonymous || r.seen.Principal != "anonymous" || r.seen.UserID != "" || r.seen.Authorization != "" {
			t.Errorf("%q: %d %+v", h, r.status, r.seen)
		}
	}
	// DNS rebinding: a page of another site that resolves to 127.0.0.1.
	req, _ := http.NewRequest(http.MethodGet, g.resource, nil)
	req.Host = "attacker.example.com"
	if r := do(t, req); r.status != http.StatusForbidden || !strings.Contains(r.body, "serves only loopback clients") {
		t.Errorf("foreign Host: %d %s", r.status, r.body)
	}

	// A connection to a non-loopback address of the machine (a listener
	// on 0.0.0.0 that New was not told of), or one whose address is
	// unknown.
	h := g.a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, local := range []net.Addr{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}, nil} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/mcp", nil)
		if local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusForbidden {
			t.Errorf("local address %v: %d", local, rec.Code)
		}
	}
}

// TestFromContext checks that a request that skipped the middleware has no
// principal, rather than an anonymous one.
func TestFromContext(t *testing.T) {
	t.Parallel()
	if p, ok := FromContext(context.Background()); ok || p.Anonymous() || p.String() != "" {
		t.Errorf("FromContext of a bare context = %+v, %v", p, ok)
	}
}
