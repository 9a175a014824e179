package sqlstore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
)

func catalog(tb testing.TB) []*mcp.Tool {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "catalogs", "livemcptool.json"))
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

// BenchmarkStores measures, for each store, a Pinner's check of a
// 527-tool tools/list that changed nothing when its pins must be read
// again from the store (a list more than Options.Refresh after the last),
// and a call's lookup when the tool's pin must be read again (at most once
// per tool per Options.Refresh; between, Allowed answers from memory as in
// package pin's BenchmarkAllowed).
//
//	go test -tags integration -run '^$' -bench Stores -benchmem ./gateway/internal/pin/sqlstore
func BenchmarkStores(b *testing.B) {
	tools := catalog(b)
	ctx := context.Background()
	type kind struct{ name, spec string } // spec "" is the memory store
	kinds := []kind{{"memory", ""}, {"sqlite", "sqlite:" + filepath.Join(b.TempDir(), "pins.db")}}
	for name, spec := range postgresSpecs(b, "") {
		kinds = append(kinds, kind{name, spec})
	}
	for _, st := range kinds {
		var store pin.Store = pin.NewMemoryStore(1 << 30)
		if st.spec != "" {
			s, err := openB(b, st.spec)
			if err != nil {
				b.Fatal(err)
			}
			store = s
		}
		now := time.Now()
		p := pin.New(store, &pin.Options{Now: func() time.Time { return now }})
		b.Run(st.name+"/first-sight", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srv := "s" + time.Now().Format("150405.000000000")
				if _, err := p.Check(ctx, srv, tools); err != nil {
					b.Fatal(err)
				}
			}
		})
		if _, err := p.Check(ctx, "live", tools); err != nil {
			b.Fatal(err)
		}
		b.Run(st.name+"/check-reread", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(pin.DefaultRefresh)
				vs, err := p.Check(ctx, "live", tools)
				if err != nil || vs[0].Event != pin.EventNone {
					b.Fatal(err, vs[0])
				}
			}
		})
		b.Run(st.name+"/allowed-reread", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(pin.DefaultRefresh)
				if err := p.Allowed(ctx, "live", tools[0].Name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
