package inject_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"go.uber.org/goleak"
)

// askServer serves one tool, ask, whose resolver asks for a name; the
// resolver's outcome (the error Elicit returned) is sent on done.
func askServer(opts *inject.Options, done chan<- error) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1"}, nil)
	name := inject.NewResolver("name", func(ctx context.Context, _ struct{}) (inject.Elicited[NameForm], error) {
		ans, err := inject.Elicit[NameForm](ctx, "What is your name?")
		done <- err
		return ans, err
	})
	inject.AddTool(s, inject.NewInjector(opts), &mcp.Tool{Name: "ask"}, func(_ context.Context, _ *inject.Request, in struct {
		Name NameForm `json:"-" inject:"name"`
	}) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name.Name}}}, nil
	}, name)
	return s
}

// silentCall sends tools/call ask on a legacy session and reads its event
// stream: it reports the elicitation request on asked (as soon as it
// arrives) and returns the JSON-RPC response, or nil if the stream ends
// without one. The client never answers the question.
func silentCall(t *testing.T, client *http.Client, url, session string, asked chan<- struct{}) *wiretest.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var msg struct {
			Method string `json:"method"`
		}
		json.Unmarshal([]byte(data), &msg)
		if msg.Method == "elicitation/create" {
			close(asked)
		}
		if msg.Method != "" {
			continue // a request or notification, not the call's response
		}
		var r wiretest.Response
		if err := json.Unmarshal(bytes.TrimSpace([]byte(data)), &r); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		r.Raw = json.RawMessage(data)
		return &r
	}
	return nil
}

// TestQuestionTimeout: a legacy client that never answers a question does
// not hold the call: after QuestionTimeout the call ends with a tool error
// that says why, on the wire.
func TestQuestionTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	done := make(chan error, 1)
	hs := httptest.NewServer(endpoint.NewHandler(askServer(&inject.Options{QuestionTimeout: 100 * time.Millisecond}, done), nil))
	defer hs.Close()
	p := wiretest.Legacy(hs.URL, formCaps)
	p.Initialize(t)
	defer p.Close()

	// A generous bound that only a call that never ends reaches.
	client := &http.Client{Timeout: 30 * time.Second}
	asked := make(chan struct{})
	r := silentCall(t, client, hs.URL, p.Session(), asked)
	select {
	case <-asked:
	default:
		t.Fatal("the question was never asked")
	}
	if r == nil {
		t.Fatal("the call's stream ended without a response")
	}
	got, isErr := text(t, r)
	if want := `resolver "name": the client did not answer an elicitation within 100ms`; !isErr || got != want {
		t.Errorf("got %q (isError %v), want %q", got, isErr, want)
	}
	if err := <-done; err == nil {
		t.Error("Elicit returned no error after the timeout")
	}
	// The session goes on.
	if r := p.Call(t, "tools/list", nil); r.Error != nil {
		t.Errorf("tools/list after the timeout: %s", r.Raw)
	}
}

// TestQuestionEndsWithSession: a question waiting for an answer ends when
// its session does (the client deletes it), long before QuestionTimeout.
func TestQuestionEndsWithSession(t *testing.T) {
	defer goleak.VerifyNone(t)
	done := make(chan error, 1)
	hs := httptest.NewServer(endpoint.NewHandler(askServer(nil, done), nil))
	defer hs.Close()
	p := wiretest.Legacy(hs.URL, formCaps)
	p.Initialize(t)

	client := &http.Client{Timeout: 30 * time.Second}
	asked := make(chan struct{})
	called := make(chan *wiretest.Response, 1)
	go func() { called <- silentCall(t, client, hs.URL, p.Session(), asked) }()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the question was never asked")
	}
	deleted := make(chan struct{})
	go func() { p.Close(); close(deleted) }() // DELETE
	select {
	case err := <-done:
		if err == nil {
			t.Error("Elicit returned no error when the session ended")
		}
	case <-time.After(30 * time.Second): // only a question that outlives its session gets here
		t.Fatal("the question still waits after its session ended")
	}
	<-deleted
	<-called
}

// TestQuestionTimeoutSDKClient: the SDK client, whose elicitation handler
// never answers, gets the call's result (a tool error) once the question
// times out.
func TestQuestionTimeoutSDKClient(t *testing.T) {
	defer goleak.VerifyNone(t)
	done := make(chan error, 1)
	hs := httptest.NewServer(endpoint.NewHandler(askServer(&inject.Options{QuestionTimeout: 100 * time.Millisecond}, done), nil))
	defer hs.Close()
	// The handler waits until the test ends; the server's notice that it
	// stopped waiting (notifications/cancelled) is best-effort in the SDK,
	// sent after the call may already have been answered.
	silent := make(chan struct{})
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-silent:
			case <-ctx.Done():
			}
			return nil, errors.New("no answer")
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer close(silent)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a bound only a hang reaches
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || got != `resolver "name": the client did not answer an elicitation within 100ms` {
		t.Errorf("got %q (isError %v)", got, res.IsError)
	}
	<-done
}
