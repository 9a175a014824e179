package stage_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// chain compiles stages in front of final, for every method.
func chain(final call.Handler, stages ...call.Stage) *call.Chain {
	finals := map[string]call.Handler{}
	for _, m := range call.Methods() {
		finals[m] = final
	}
	return call.Compile(finals, stages...)
}

// stageFunc is a stage made of a function, for tests.
type stageFunc struct {
	name  string
	serve func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error)
}

func (s *stageFunc) Name() string { return s.name }

func (s *stageFunc) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	return s.serve(ctx, c, next)
}

// decodeResult decodes a tool result's JSON.
func decodeResult(t testing.TB, res json.RawMessage) *mcp.CallToolResult {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	return &r
}
