package stage_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// TestPin: a call of a tool whose definition changed (strict mode) is
// refused with a tool error naming the change and the command that
// approves it, and never reaches forward; after the approval it goes
// ahead. Prompts pass through.
func TestPin(t *testing.T) {
	ctx := context.Background()
	d := newDirectory(t)
	p := pin.New(pin.NewMemoryStore(0), nil)
	yes, no := true, false
	read := func(destructive *bool) []*mcp.Tool {
		return []*mcp.Tool{{Name: "read", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{DestructiveHint: destructive}}}
	}
	if _, err := p.Check(ctx, "up", read(&yes)); err != nil {
		t.Fatal(err)
	}
	vs, err := p.Check(ctx, "up", read(&no))
	if err != nil || vs[0].State != pin.StateQuarantined {
		t.Fatalf("check: %+v, %v", vs, err)
	}

	forwarded := 0
	final := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) {
		forwarded++
		return json.RawMessage(`{"content":[]}`), nil
	})
	h := chain(final, &stage.Route{Dir: d}, &stage.Pin{Pins: p})
	c := &call.Call{Method: call.ToolsCall, Name: "up__read", Client: &call.Client{}}
	res, err := h.Serve(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResult(t, res)
	if r == nil || !r.IsError || len(r.Content) != 1 {
		t.Fatalf("result %+v: want a tool error", res)
	}
	msg := r.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{`tool "read" of server "up" is quarantined`, "annotations.destructiveHint true -> false",
		"the call was not sent to the server", "preflight pins approve up read " + vs[0].Fingerprint} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if forwarded != 0 || c.Outcome != "quarantined" {
		t.Errorf("forwarded %d times, outcome %q", forwarded, c.Outcome)
	}

	if _, err := h.Serve(ctx, &call.Call{Method: call.PromptsGet, Name: "up__greet", Client: &call.Client{}}); err != nil || forwarded != 1 {
		t.Errorf("prompt: %v, forwarded %d", err, forwarded)
	}

	if _, err := p.Approve(ctx, "up", "read", vs[0].Fingerprint, "alice"); err != nil {
		t.Fatal(err)
	}
	c = &call.Call{Method: call.ToolsCall, Name: "up__read", Client: &call.Client{}}
	if res, err := h.Serve(ctx, c); err != nil || decodeResult(t, res).IsError || forwarded != 2 {
		t.Errorf("after approval: %+v, %v, forwarded %d", res, err, forwarded)
	}
}

// TestPinStoreDown: when the pins cannot be read and nothing is known of
// the tool, the call is refused (fail closed) with an internal error.
func TestPinStoreDown(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "pins.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	forwarded := false
	final := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) {
		forwarded = true
		return json.RawMessage(`{"content":[]}`), nil
	})
	h := chain(final, &stage.Route{Dir: newDirectory(t)}, &stage.Pin{Pins: pin.New(s, nil)})
	c := &call.Call{Method: call.ToolsCall, Name: "up__read", Client: &call.Client{}}
	_, err = h.Serve(ctx, c)
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, `cannot read the pinned definitions of server "up"`) {
		t.Errorf("error %v: want an internal error saying the pins cannot be read", err)
	}
	if forwarded || c.Outcome != "error" {
		t.Errorf("forwarded %v, outcome %q", forwarded, c.Outcome)
	}
}
