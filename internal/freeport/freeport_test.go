package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/preflightmcp/preflight/internal/freeport"
)

func TestGet(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	ln.Close()
}
