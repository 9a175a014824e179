package upstream

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyResultLeavesCallTable: when a legacy upstream's result reaches
// the caller, the call has left the upstream's call table, so the next
// call's mid-call question is routed to it rather than refused as
// belonging to one of two calls (the TestEras flake). A hook holds the
// exchange's goroutine right after it hands the result over, which makes
// the old order (result first, table after) fail every time.
func TestLegacyResultLeavesCallTable(t *testing.T) {
	release := make(chan struct{})

	server := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	changed := make(chan struct{}, 1)
	c, err := New(Spec{Name: "legacy", Era: EraLegacy, Connect: func(context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = server.Run(ctx, st) }()
		return ct, nil
	}}, &Options{OnChange: func(*Conn) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.testHookResultSent = func() { <-release }
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { close(release); cancel(); <-done }()
	for c.Health().State != StateUp {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}

	ex, err := c.Start(ctx, Request{Method: MethodCallTool, Name: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	step, err := ex.Next(ctx)
	if err != nil || step.Result == nil {
		t.Fatalf("Next = %+v, %v", step, err)
	}
	c.calls.mu.Lock()
	n := len(c.calls.live)
	c.calls.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls in the table after the only call's result was delivered, want 0", n)
	}
}
