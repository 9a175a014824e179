package loopback_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

func TestIs(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.9.9.9": true, "[::1]:1": true, "::1": true, "localhost:80": true, "LocalHost": true,
		"[::ffff:127.0.0.1]:80": true,
		":8080":                 false, "0.0.0.0:80": false, "10.0.0.1:80": false, "example.com:80": false, "localhost.evil.com": false, "": false,
	} {
		if got := loopback.Is(addr); got != want {
			t.Errorf("Is(%q) = %v, want %v", addr, got, want)
		}
	}
}
