package gateway_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSmoke(t *testing.T) {
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "files", URL: filesServer(t)},
		{Name: "folders", Connect: foldersServer(t)},
	}})
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		r := p.Call(t, "tools/list", nil)
		t.Logf("%s tools/list: %s", p.Version, r.Raw)
		r = p.Call(t, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}})
		t.Logf("%s tools/call: %s", p.Version, r.Raw)
		p.Close()
	}
}
