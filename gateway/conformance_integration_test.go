//go:build integration

package gateway_test

import (
	"testing"

	"github.com/preflightmcp/preflight/conformance"
	"github.com/preflightmcp/preflight/conformance/fixture"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
)

// TestConformanceThroughGateway runs the official conformance suite
// against the gateway in front of the project's conformance fixture (one
// upstream, so names are unchanged), on one gateway URL for both
// requirement sets. It requires what the fixture passes directly: every
// scored scenario (37 for 2026-07-28, 30 for 2025-11-25).
func TestConformanceThroughGateway(t *testing.T) {
	s := fixture.NewServer(nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	upstreamURL := serveHTTP(t, endpoint.NewHandler(s, nil))
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "fixture", URL: upstreamURL}}})
	conformance.Run(t, url)
}
