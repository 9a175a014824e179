package signin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestReach checks where an upstream may send the gateway's sign-in
// requests: a public upstream only to public addresses, a private or
// loopback one also to private and loopback ones, and nobody to
// link-local (cloud metadata), unspecified or multicast addresses.
func TestReach(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		upstream string
		want     reach
	}{
		{"https://93.184.216.34/mcp", reachPublic},
		{"http://127.0.0.1:8080/mcp", reachPrivate},
		{"http://[::1]:8080/mcp", reachPrivate},
		{"http://localhost:8080/mcp", reachPrivate},
		{"http://10.1.2.3/mcp", reachPrivate},
		{"http://100.64.1.1/mcp", reachPrivate},
		{"http://[fd00::1]/mcp", reachPrivate},
		{"::not a url", reachPublic},
	} {
		if got := reachOf(context.Background(), c.upstream); got != c.want {
			t.Errorf("reachOf(%s) = %v, want %v", c.upstream, got, c.want)
		}
	}
	for _, c := range []struct {
		ip              string
		public, private bool
	}{
		{"93.184.216.34", true, true},
		{"2606:2800:220:1::1", true, true},
		{"127.0.0.1", false, true},
		{"10.0.0.1", false, true},
		{"192.168.1.1", false, true},
		{"::ffff:192.168.1.1", false, true},
		{"169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"0.0.0.0", false, false},
		{"224.0.0.1", false, false},
	} {
		ip := netip.MustParseAddr(c.ip)
		if got := reachPublic.allowed(ip); got != c.public {
			t.Errorf("a public upstream reaching %s: %v, want %v", c.ip, got, c.public)
		}
		if got := reachPrivate.allowed(ip); got != c.private {
			t.Errorf("a private upstream reaching %s: %v, want %v", c.ip, got, c.private)
		}
	}
}

// TestGuardedClient checks the guard on a real connection: a public
// upstream's client does not reach a server on loopback.
func TestGuardedClient(t *testing.T) {
	t.Parallel()
	srv := serveOK(t)
	_, err := reachPublic.client().Get(srv)
	if err == nil || !strings.Contains(err.Error(), "may not send the gateway there") {
		t.Fatalf("a public upstream's client reached %s: %v", srv, err)
	}
	resp, err := reachPrivate.client().Get(srv)
	if err != nil {
		t.Fatalf("a loopback upstream's client did not reach %s: %v", srv, err)
	}
	resp.Body.Close()
}

// serveOK serves 200 on loopback for the test and returns its URL.
func serveOK(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.URL
}
