package stage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// fakeConn is a client that answers every question with answer and err,
// or, when block is set, only once the question's context ends.
type fakeConn struct {
	answer mcp.InputResponse
	err    error
	block  bool

	mu        sync.Mutex
	asked     []mcp.InputRequest
	completed []string
}

func (f *fakeConn) Ask(ctx context.Context, method string, params mcp.InputRequest) (mcp.InputResponse, error) {
	f.mu.Lock()
	f.asked = append(f.asked, params)
	f.mu.Unlock()
	if method != "elicitation/create" {
		return nil, errors.New("unexpected method " + method)
	}
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.answer, f.err
}

func (f *fakeConn) Notify(context.Context, string, json.RawMessage) {}

func (f *fakeConn) Completed(_ context.Context, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed = append(f.completed, id)
}

// questions returns the elicitations the client was asked.
func (f *fakeConn) questions() []*mcp.ElicitParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*mcp.ElicitParams
	for _, q := range f.asked {
		p, _ := q.(*mcp.ElicitParams)
		out = append(out, p)
	}
	return out
}

// upstreamNext is the handler after the stage under test: it counts the
// calls that reached it and remembers the last one's confirmation.
type upstreamNext struct {
	mu    sync.Mutex
	calls int
	conf  *call.Confirmation
	state string
}

func (n *upstreamNext) Serve(_ context.Context, c *call.Call) (json.RawMessage, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	n.conf, n.state = c.Confirmation, c.RequestState
	return json.RawMessage(`{"content":[{"type":"text","text":"ran"}]}`), nil
}

func (n *upstreamNext) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// Client capabilities.
var (
	formCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	urlCaps  = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
)

// deleteCall is a tools/call of files__delete that needs confirmation.
func deleteCall(t testing.TB, conn call.Conn, caps *mcp.ClientCapabilities, args string) *call.Call {
	t.Helper()
	up, err := upstream.New(upstream.Spec{Name: "files", URL: "http://127.0.0.1:1/mcp", Lazy: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &call.Call{
		Method: call.ToolsCall, Name: "files__delete", Target: "delete", Arguments: json.RawMessage(args),
		Upstream: up, Tool: &catalog.Tool{Upstream: "files", Name: "delete"},
		Decision: &call.Decision{Verdict: call.Confirm, Reason: "it deletes files"},
		Client:   &call.Client{Principal: "alice", Capabilities: caps, Conn: conn},
	}
}

// retryOf is c's retry by the same client, carrying state and answers.
func retryOf(c *call.Call, state string, answers mcp.InputResponseMap) *call.Call {
	return &call.Call{
		Method: c.Method, Name: c.Name, Target: c.Target, Arguments: c.Arguments,
		Upstream: c.Upstream, Tool: c.Tool, Decision: c.Decision, Client: c.Client,
		RequestState: state, InputResponses: answers,
	}
}

// inputRequired decodes an input_required result: its questions by key
// and its requestState.
func inputRequired(t testing.TB, res json.RawMessage) (map[string]json.RawMessage, string) {
	t.Helper()
	var r struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.ResultType != "input_required" || r.RequestState == "" {
		t.Fatalf("result %s (%v), want input_required with a requestState", res, err)
	}
	return r.InputRequests, r.RequestState
}

// wantToolError fails unless res is a tool error whose text holds every
// one of parts.
func wantToolError(t testing.TB, res json.RawMessage, err error, parts ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v, want a tool error", err)
	}
	r := decodeResult(t, res)
	if !r.IsError || len(r.Content) != 1 {
		t.Fatalf("result %s, want a tool error", res)
	}
	text := r.Content[0].(*mcp.TextContent).Text
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("tool error %q does not say %q", text, p)
		}
	}
}

// wantWireError fails unless err is a JSON-RPC error with code.
func wantWireError(t testing.TB, err error, code int64) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("error %v, want JSON-RPC error %d", err, code)
	}
}

func accept(confirm bool) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": confirm}}
}
