package pin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
)

// catalog reads a tools/list result of testdata/catalogs.
func catalog(tb testing.TB, name string) []*mcp.Tool {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "catalogs", name))
	if err != nil {
		tb.Fatal(err)
	}
	var list struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		tb.Fatal(err)
	}
	return list.Tools
}

// BenchmarkCheck measures the check of one tools/list of a 527-tool
// catalog whose tools are all pinned and unchanged: what the gateway pays
// on every upstream tools/list.
//
//	go test -run '^$' -bench 'Check|Allowed' -benchmem ./gateway/pin
func BenchmarkCheck(b *testing.B) {
	tools := catalog(b, "livemcptool.json")
	p := pin.New(pin.NewMemoryStore(0), nil)
	ctx := context.Background()
	if _, err := p.Check(ctx, "live", tools); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		vs, err := p.Check(ctx, "live", tools)
		if err != nil || vs[0].State != pin.StatePinned {
			b.Fatal(err, vs[0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(tools)), "µs/tool")
}

// BenchmarkDefine measures fingerprinting alone, per catalog.
func BenchmarkDefine(b *testing.B) {
	tools := catalog(b, "livemcptool.json")
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range tools {
			if _, err := pin.Define(t); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAllowed measures the lookup before every tools/call, for a
// pinned tool and for a quarantined one, from several goroutines.
func BenchmarkAllowed(b *testing.B) {
	tools := catalog(b, "livemcptool.json")
	p := pin.New(pin.NewMemoryStore(0), nil)
	ctx := context.Background()
	if _, err := p.Check(ctx, "live", tools); err != nil {
		b.Fatal(err)
	}
	changed := *tools[1]
	changed.Description += " (changed)"
	if vs, err := p.Check(ctx, "live", []*mcp.Tool{&changed}); err != nil || vs[0].State != pin.StateQuarantined {
		b.Fatal(err, vs)
	}
	b.Run("pinned", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Allowed(ctx, "live", tools[0].Name); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("quarantined", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Allowed(ctx, "live", tools[1].Name); err == nil {
					b.Fatal("allowed")
				}
			}
		})
	})
}
