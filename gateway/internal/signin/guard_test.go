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
// link-local (cloud metadata), unspecified or multicast addresses, nor to
// the metadata services clouds keep at private ones, in whatever form the
// address comes.
func TestReach(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		upstream string
		want     reach
	}{
		{"https://93.184.216.34/mcp", reachPublic},
		{"https://[2606:2800:220:1::1]/mcp", reachPublic},
		{"http://127.0.0.1:8080/mcp", reachPrivate},
		{"http://127.8.9.10/mcp", reachPrivate},
		{"http://[::1]:8080/mcp", reachPrivate},
		{"http://localhost:8080/mcp", reachPrivate},
		{"http://LOCALHOST:8080/mcp", reachPrivate}, // a name resolving to loopback (the hosts file)
		{"http://10.1.2.3/mcp", reachPrivate},
		{"http://172.16.0.1/mcp", reachPrivate},
		{"http://192.168.0.1/mcp", reachPrivate},
		{"http://100.64.1.1/mcp", reachPrivate},
		{"http://[fd00::1]/mcp", reachPrivate},
		{"http://[::ffff:10.0.0.1]/mcp", reachPrivate},
		{"http://[64:ff9b::a00:5]/mcp", reachPrivate},   // NAT64 of 10.0.0.5
		{"http://[64:ff9b::808:808]/mcp", reachPublic},  // NAT64 of 8.8.8.8
		{"http://[64:ff9b:1::a00:5]/mcp", reachPrivate}, // local-use NAT64
		{"http://169.254.169.254/mcp", reachPublic},     // reaches nothing link-local either
		{"http://[fe80::1]/mcp", reachPublic},
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
		{"127.255.0.1", false, true},
		{"::1", false, true},
		{"10.0.0.1", false, true},
		{"172.31.255.255", false, true},
		{"192.168.1.1", false, true},
		{"100.100.100.199", false, true}, // RFC 6598
		{"fd12:3456::1", false, true},
		{"::ffff:192.168.1.1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"169.254.169.254", false, false},
		{"169.254.0.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"fd00:ec2::254", false, false},   // AWS's metadata service over IPv6
		{"fd20:ce::254", false, false},    // Google's
		{"100.100.100.200", false, false}, // Alibaba's
		{"::ffff:100.100.100.200", false, false},
		{"fd00:ec2::254%eth0", false, false},
		{"fd00:ec2::253", false, true},
		{"fd00:ec2::23", false, false},            // the EKS pod identity agent
		{"192.0.0.192", false, false},             // Oracle's, a public address
		{"fd00:c1::a9fe:a9fe", false, false},      // Oracle's over IPv6
		{"168.63.129.16", false, false},           // Azure's WireServer, a public address
		{"64:ff9b::a9fe:a9fe", false, false},      // NAT64 of 169.254.169.254
		{"64:ff9b::a00:1", false, true},           // NAT64 of 10.0.0.1
		{"64:ff9b::7f00:1", false, true},          // NAT64 of 127.0.0.1
		{"64:ff9b::808:808", true, true},          // NAT64 of 8.8.8.8
		{"64:ff9b:1::808:808", false, true},       // local-use NAT64
		{"64:ff9b:1::a9fe:a9fe", false, false},    // local-use NAT64 of 169.254.169.254
		{"64:ff9b::a9fe:a9fe%eth0", false, false}, // a zone hides nothing
		{"64:ff9b::a00:1%lo", false, true},
		{"fd00:ec2::254%lo", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"ff01::1", false, false},
	} {
		ip := netip.MustParseAddr(c.ip)
		if got := reachPublic.allowed(ip); got != c.public {
			t.Errorf("a public upstream reaching %s: %v, want %v", c.ip, got, c.public)
		}
		if got := reachPrivate.allowed(ip); got != c.private {
			t.Errorf("a private upstream reaching %s: %v, want %v", c.ip, got, c.private)
		}
	}
	if reachPrivate.allowed(netip.Addr{}) {
		t.Error("the zero address is allowed")
	}
}

// TestGuardedClient checks the guard on a real connection: a public
// upstream's client does not reach a server on loopback, by address or by
// a name that resolves there.
func TestGuardedClient(t *testing.T) {
	t.Parallel()
	srv := serveOK(t)
	for _, u := range []string{srv, strings.Replace(srv, "127.0.0.1", "LOCALHOST", 1)} {
		_, err := reachPublic.client().Get(u)
		if err == nil || !strings.Contains(err.Error(), "may not send the gateway there") {
			t.Errorf("a public upstream's client reached %s: %v", u, err)
		}
	}
	resp, err := reachPrivate.client().Get(srv)
	if err != nil {
		t.Fatalf("a loopback upstream's client did not reach %s: %v", srv, err)
	}
	resp.Body.Close()
}

// TestGuardedRedirect: a redirect is checked as the first request is: a
// loopback upstream's client, which may reach loopback, is not sent on to
// a link-local address (cloud metadata) in any of its forms.
func TestGuardedRedirect(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://[fe80::1]:80/"} {
		srv := httptest.NewServer(http.RedirectHandler(to, http.StatusFound))
		_, err := reachPrivate.client().Get(srv.URL)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "may not send the gateway there") {
			t.Errorf("a redirect to %s: %v, want refused by the guard", to, err)
		}
	}
}

// TestClientFor: a server's sign-in requests use Options.HTTPClient as
// given, else a guarded client decided once per server by its URL.
func TestClientFor(t *testing.T) {
	t.Parallel()
	srv := serveOK(t)
	servers := []Server{{Name: "public", URL: "https://93.184.216.34/mcp"}, {Name: "local", URL: srv + "/mcp"}}
	m := newManager(t, servers, Options{})
	c := m.clientFor(t.Context(), "public")
	if c != m.clientFor(t.Context(), "public") {
		t.Error("a server's client was made again")
	}
	if _, err := c.Get(srv); err == nil || !strings.Contains(err.Error(), "may not send the gateway there") {
		t.Errorf("a public server's client reached loopback: %v", err)
	}
	resp, err := m.clientFor(t.Context(), "local").Get(srv)
	if err != nil {
		t.Fatalf("a loopback server's client: %v", err)
	}
	resp.Body.Close()
	given := &http.Client{}
	if newManager(t, servers, Options{HTTPClient: given}).clientFor(t.Context(), "public") != given {
		t.Error("Options.HTTPClient was not used")
	}
}

// serveOK serves 200 on loopback for the test and returns its URL.
func serveOK(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.URL
}
