package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
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
	final := pipeline.HandlerFunc(func(context.Context, *pipeline.Call) (mcp.Result, error) { return nil, nil })
	h := pipeline.Chain(final, g.hold())
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := &pipeline.Call{}
		for pb.Next() {
			conn, _ := g.Upstream("a")
			c.Upstream = conn
			_ = g.resolver()
			_, _ = h.Serve(ctx, c)
		}
	})
}
