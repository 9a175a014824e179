// Package freeport finds a free loopback TCP port for a test's server
// (Redis, PostgreSQL, HAProxy, a gateway replica) that must be told its port
// before it starts.
package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Get returns a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel's choice for a listener closed at once. Another process may take
// it before the caller binds it; a server that fails to bind is retried by
// its rig.
func Get() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Arg is [Get] for a test, as text for a command line or a config file;
// it ends the test when no port can be had.
func Arg(t testing.TB) string {
	t.Helper()
	port, err := Get()
	if err != nil {
		t.Fatalf("no free port: %v", err)
	}
	return strconv.Itoa(port)
}

// Addrs returns n distinct loopback addresses (host:port) that were free a
// moment ago, for a server that takes several; it ends the test when they
// cannot be had.
func Addrs(t testing.TB, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("no free port: %v", err)
		}
		defer ln.Close() // held until all are chosen, so that they differ
		out = append(out, ln.Addr().String())
	}
	return out
}
