package rounds_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
)

// BenchmarkRound measures the cost of one extra round: op=plain is a
// tools/call that needs no input, op=one-round one that asks a single form
// question and is retried with the answer, both on the same 2026-07-28
// session over loopback HTTP, so their ratio comes from one run.
// op=one-round-sdk is the same call through the SDK's built-in loop (a
// plain mcp.Client, on its own session), for comparison.
//
//	go test -run '^$' -bench . -benchmem -count 5 ./rounds/
func BenchmarkRound(b *testing.B) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "plain", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("ok"), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.InputResponses == nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": elicit("go?")}, RequestState: "state"}, nil
		}
		return text("ok"), nil
	})
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	b.Cleanup(hs.Close)
	url := hs.URL
	copts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": "yes"}}, nil
	}}
	cs := connect(b, url, modern, copts, nil)

	sdk := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, copts)
	sdkcs, err := sdk.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sdkcs.Close() })

	run := func(cs *mcp.ClientSession, tool string) func(*testing.B) {
		return func(b *testing.B) {
			ctx := context.Background()
			p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}
			for b.Loop() {
				res, err := cs.CallTool(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				if res.NeedsInput() || len(res.Content) != 1 {
					b.Fatalf("unexpected result %+v", res)
				}
			}
		}
	}
	b.Run("op=plain", run(cs, "plain"))
	b.Run("op=one-round", run(cs, "ask"))
	b.Run("op=one-round-sdk", run(sdkcs, "ask"))
}
