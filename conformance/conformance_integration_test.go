//go:build integration

package conformance

import (
	"context"
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/conformance/fixture"
	"github.com/preflightmcp/preflight/endpoint"
)

// TestConformance runs the official conformance suite against the fixture,
// served through endpoint.NewHandler on one URL, for each requirement set
// (see Run).
func TestConformance(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the server stopped
	Run(t, serveFixture(t))
}

// serveFixture serves a new fixture on 127.0.0.1 at endpoint.Path until the
// test ends and returns its URL. At the end it stops the server and closes
// the legacy sessions the suite left open.
func serveFixture(t *testing.T) string {
	t.Helper()
	server := fixture.NewServer(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- endpoint.Serve(ctx, ln, endpoint.NewHandler(server, nil)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("fixture server: %v", err)
		}
		for ss := range server.Sessions() {
			ss.Close()
		}
	})
	return "http://" + ln.Addr().String() + endpoint.Path
}
