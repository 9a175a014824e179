package page_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/page"
)

// The real sources satisfy the page's interfaces.
var (
	_ page.Approvals = (*approval.Service)(nil)
	_ page.AuditLog  = audit.Store(nil)
)

// FuzzUnsignedRequests: whatever a browser without a session sends
// (method, path, query, host, cookies, form), the page neither panics nor
// shows anything but the sign-in page, a redirect to it, or a refusal.
func FuzzUnsignedRequests(f *testing.F) {
	f.Add("GET", "/", "127.0.0.1", "", "")
	f.Add("POST", "/approvals/AAAAAAAAAAAAAAAAAAAAAA/approve", "localhost", "preflight_session=x", "csrf=y")
	f.Add("GET", "/audit?effect=delete&since=1h", "[::1]:1", "preflight_next=%2F%2Fevil", "")
	f.Add("POST", "/login", "127.0.0.1", "", "token=AAAA")
	f.Add("GET", "/login?token=%00", "127.0.0.1", "", "")
	a := approval.New(nil, nil)
	h, err := page.New(page.NewTokenLogin(nil), &page.Options{Approvals: a})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target, host, cookie, form string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || !httpToken(method) {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", strings.NewReader(form))
		req.Method, req.URL, req.RequestURI, req.Host = method, u, target, host
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if strings.Contains(body, `id="who"`) || strings.Contains(body, `name="csrf"`) {
			t.Fatalf("%s %s answered %d with a signed-in page", method, target, rec.Code)
		}
		// Redirects stay on the page: to sign in, or the router's
		// cleaned path.
		if loc := rec.Header().Get("Location"); loc != "" && (!strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\")) {
			t.Fatalf("%s %s redirected to %q", method, target, loc)
		}
		if rec.Header().Get("Content-Security-Policy") == "" {
			t.Fatalf("%s %s: no CSP", method, target)
		}
	})
}

func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}
