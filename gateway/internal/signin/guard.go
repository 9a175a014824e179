package signin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"syscall"
	"time"
)

// Where an upstream may send the gateway: the discovery, registration and
// token requests go to addresses the upstream names (its challenge, its
// protected-resource metadata), and a hostile upstream could name the
// gateway's own network (server-side request forgery). So they reach only
// addresses of the kind the upstream's own has: a public upstream's
// authorization server must be public; an upstream on a private network or
// on loopback may use one there. Link-local addresses (cloud metadata
// services), the few private ones of other metadata services, unspecified
// and multicast ones are never reached.

// reach is the kind of addresses requests may go to.
type reach int

const (
	reachPublic  reach = iota // public addresses only
	reachPrivate              // public, private and loopback
)

// reachOf returns what an upstream at serverURL may make the gateway
// reach: private when its host is, or resolves only to, private or
// loopback addresses (a public name that also resolves to a private
// address does not open the gateway's network).
func reachOf(ctx context.Context, serverURL string) reach {
	u, err := url.Parse(serverURL)
	if err != nil {
		return reachPublic
	}
	host := u.Hostname()
	if host == "localhost" {
		return reachPrivate
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if local(ip) {
			return reachPrivate
		}
		return reachPublic
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return reachPublic
	}
	for _, ip := range ips {
		if !local(ip) {
			return reachPublic
		}
	}
	return reachPrivate
}

// local reports a loopback or private address.
func local(ip netip.Addr) bool {
	ip = unwrap(ip)
	return ip.IsLoopback() || ip.IsPrivate() || cgnat.Contains(ip) || nat64Local.Contains(ip)
}

// unwrap returns the address a connection to ip reaches, as the rules
// judge it: without its zone (which Linux ignores on an address that is
// not link-local, and which Prefix.Contains never matches), an
// IPv4-mapped address as IPv4, and a NAT64 address of the well-known
// prefix as the IPv4 address it stands for.
func unwrap(ip netip.Addr) netip.Addr {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip
}

// cgnat is the shared address space of RFC 6598, private in practice.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// NAT64 prefixes: the well-known one (RFC 6052), whose addresses stand for
// the IPv4 address in their last 32 bits, and the local-use one (RFC
// 8215), private, whose last 32 bits are judged too (the common /96
// layout), so that no translator there leads to a link-local or metadata
// address.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
)

// metadataServices are the cloud metadata and host services not on a
// link-local address: AWS's over IPv6 (instance metadata, the EKS pod
// identity agent), Google's over IPv6, Oracle's (IPv4 and IPv6),
// Alibaba's, and Azure's WireServer. No upstream may send the gateway to
// them, even the public ones among them.
var metadataServices = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
	netip.MustParseAddr("fd20:ce::254"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("fd00:c1::a9fe:a9fe"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// allowed reports whether a connection may go to ip.
func (r reach) allowed(ip netip.Addr) bool {
	ip = unwrap(ip)
	if nat64Local.Contains(ip) {
		b := ip.As16()
		if !reachPrivate.allowed(netip.AddrFrom4([4]byte(b[12:]))) {
			return false
		}
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(),
		slices.Contains(metadataServices, ip):
		return false
	case local(ip):
		return r == reachPrivate
	}
	return true
}

// client returns an HTTP client whose connections go only where r allows,
// checked on the address actually dialled (after DNS, and for every
// redirect).
func (r reach) client() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if !r.allowed(ap.Addr()) {
			return fmt.Errorf("signin: refusing to connect to %s: the upstream may not send the gateway there", ap.Addr())
		}
		return nil
	}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // the address dialled must be the one checked
	t.DialContext = d.DialContext
	t.MaxIdleConnsPerHost = 4
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// clientFor returns the client of s's sign-in requests: Options.HTTPClient
// when given, else one guarded by s's reach (decided once).
func (m *Manager) clientFor(ctx context.Context, server string) *http.Client {
	if m.opts.HTTPClient != nil {
		return m.opts.HTTPClient
	}
	m.mu.Lock()
	c := m.clients[server]
	m.mu.Unlock()
	if c != nil {
		return c
	}
	c = reachOf(ctx, m.servers[server].URL).client()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.clients[server]; old != nil {
		return old
	}
	m.clients[server] = c
	return c
}
