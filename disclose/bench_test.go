package disclose

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// Benchmarks (figures in docs/disclosure.md):
//
//	go test -run '^$' -bench . -benchmem ./disclose/
//
// BenchmarkCheck is the authorization check alone: the middleware on a
// tools/call that was authorized, with the tool handler replaced by a
// constant, against the handler called directly ("none"), and a bare
// Redis PING for the round trip the Redis store pays. BenchmarkRead is a
// tool_descriptions read of 1 and of 50 tools of the 527-tool catalog,
// through the middleware (handler level) and through an in-memory client
// (end to end, with JSON-RPC encoding).

// catalogServer is a server with the 527 tools of the LiveMCPBench
// catalog, with disclosure installed, and a connected client.
func catalogServer(b *testing.B, opts *Options) (*Server, *mcp.ServerSession, *mcp.ClientSession, mcp.MethodHandler, []string) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "livemcptool.json"))
	if err != nil {
		b.Fatal(err)
	}
	var c struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		b.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "catalog", Version: "v0"}, nil)
	var inner mcp.MethodHandler
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler { inner = next; return next })
	ds := New(s, opts)
	names := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		if m, ok := t.InputSchema.(map[string]any); !ok || m["type"] != "object" {
			t.InputSchema = map[string]any{"type": "object"}
		}
		s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		names[i] = t.Name
	}
	// A small static resource: the baseline cost of any read.
	s.AddResource(&mcp.Resource{URI: "test:///plain", Name: "plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test:///plain", Text: "{}"}}}, nil
	})
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Close() })
	return ds, ss, cs, inner, names
}

func BenchmarkCheck(b *testing.B) {
	done := &mcp.CallToolResult{}
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return done, nil }
	for _, store := range []string{"none", "memory"} {
		b.Run(store, func(b *testing.B) {
			opts := &Options{FetchRate: rate.Inf}
			switch store {
			case "memory":
				opts.Store = NewMemoryStore(nil)
			}
			ds, ss, _, inner, names := catalogServer(b, opts)
			ctx := context.Background()
			// A 2026-07-28 request from principal alice, who fetched the
			// tool.
			extra := &mcp.RequestExtra{Header: http.Header{}, TokenInfo: &auth.TokenInfo{UserID: "alice"}}
			tool := names[len(names)/2]
			read := &mcp.ReadResourceRequest{Session: ss, Extra: extra, Params: &mcp.ReadResourceParams{URI: SelectionURI(DefaultURI, tool)}}
			if _, err := ds.middleware(inner)(ctx, "resources/read", read); err != nil {
				b.Fatal(err)
			}
			req := &mcp.CallToolRequest{Session: ss, Extra: extra, Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{}`)}}
			h := ds.middleware(next)
			if store == "none" {
				h = next
			}
			if res, err := h(ctx, "tools/call", req); err != nil || res != done {
				b.Fatalf("call not authorized: %v %v", res, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := h(ctx, "tools/call", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	ds, ss, cs, inner, names := catalogServer(b, &Options{FetchRate: rate.Inf})
	ctx := context.Background()
	h := ds.middleware(inner)
	b.Run("client/plain-resource", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test:///plain"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 50} {
		uri := SelectionURI(DefaultURI, names[:n]...)
		b.Run(fmt.Sprintf("handler/tools=%d", n), func(b *testing.B) {
			req := &mcp.ReadResourceRequest{Session: ss, Params: &mcp.ReadResourceParams{URI: uri}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, "resources/read", req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("client/tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(res.Contents[0].Text)))
			}
		})
	}
}
