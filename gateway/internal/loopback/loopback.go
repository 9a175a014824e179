// Package loopback tells loopback addresses, which only this machine can
// reach: where the gateway may serve without authentication, sign people
// in to its page with a one-time token, or fetch keys over plain http.
package loopback

import (
	"net"
	"net/netip"
	"strings"
)

// Is reports whether addr, a host:port or a host, names a loopback
// address: localhost, 127.0.0.0/8 or ::1. Other names are not resolved and
// are not loopback; an empty host (":8080", every interface) is not.
func Is(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
