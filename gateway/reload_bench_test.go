package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// BenchmarkReloadablePath measures what reloading costs every call: route's
// upstream lookup in the published set, the hold stage around the rest of
// the chain, and the resolver's atomic load.
//
//	cd gateway && go test -run '^$' -bench BenchmarkReloadablePath -benchmem .
func BenchmarkReloadablePath(b *testing.B) {
	g, err := New(&Options{Upstreams: []UpstreamSpec{{Name: "a", URL: "http://127.0.0.1:1/mcp", Lazy: true}, {Name: "b", URL: "http://127.0.0.1:1/mcp", Lazy: true}}})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	final := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return nil, nil })
	h := call.Compile(map[string]call.Handler{call.ToolsCall: final}, &stage.Hold{Holder: g})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := &call.Call{Method: call.ToolsCall}
		for pb.Next() {
			conn, _ := g.Upstream("a")
			c.Upstream = conn
			_ = g.resolver()
			_, _ = h.Serve(ctx, c)
		}
	})
}
