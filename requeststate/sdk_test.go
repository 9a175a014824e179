package requeststate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/requeststate"
)

// confirmServer has a tool, a prompt and a resource that each ask one
// question through input_required and keep what they asked in a sealed
// requestState, the way a hand-written flow does.
type confirmServer struct {
	ring     *requeststate.Ring
	refused  atomic.Int32 // requests whose state was refused
	finished atomic.Int32 // requests that ran to the end with an answer
	reasons  chan requeststate.Reason
}

const audience = "folders"

func confirmRequest() mcp.InputRequestMap {
	return mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
		Message:         "Really?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
	}}
}

// round opens the state of req; it returns whether this is a retry with
// the state this server sealed, and the wire error to answer otherwise.
func (s *confirmServer) round(req mcp.Request) (retry bool, err error) {
	state, err := s.ring.OpenRequest(req, audience)
	if err != nil {
		s.refused.Add(1)
		s.reasons <- requeststate.ReasonOf(err)
		return false, requeststate.WireError(err)
	}
	if state == nil {
		return false, nil
	}
	if string(state) != "asked:confirm" {
		return false, errors.New("unexpected state")
	}
	return true, nil
}

func answer(responses mcp.InputResponseMap) string {
	if r, ok := responses["confirm"].(*mcp.ElicitResult); ok && r.Action == "accept" && r.Content["ok"] == true {
		return "confirmed"
	}
	return "not confirmed"
}

func newConfirmServer(t *testing.T) (*confirmServer, *mcp.Server) {
	ring, err := requeststate.NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &confirmServer{ring: ring, reasons: make(chan requeststate.Reason, 100)}
	srv := mcp.NewServer(&mcp.Implementation{Name: audience, Version: "1"}, nil)

	type args struct {
		Path string `json:"path"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_folder"}, func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		retry, err := s.round(req)
		if err != nil {
			return nil, nil, err
		}
		if !retry {
			token, err := s.ring.SealRequest(req, audience, []byte("asked:confirm"))
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{InputRequests: confirmRequest(), RequestState: token}, nil, nil
		}
		s.finished.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(req.Params.InputResponses) + " " + in.Path}}}, nil, nil
	})

	srv.AddPrompt(&mcp.Prompt{Name: "review", Arguments: []*mcp.PromptArgument{{Name: "file"}}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		retry, err := s.round(req)
		if err != nil {
			return nil, err
		}
		if !retry {
			token, err := s.ring.SealRequest(req, audience, []byte("asked:confirm"))
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{InputRequests: confirmRequest(), RequestState: token}, nil
		}
		s.finished.Add(1)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: answer(req.Params.InputResponses)}}}}, nil
	})

	srv.AddResource(&mcp.Resource{URI: "file:///report.txt", Name: "report"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		retry, err := s.round(req)
		if err != nil {
			return nil, err
		}
		if !retry {
			token, err := s.ring.SealRequest(req, audience, []byte("asked:confirm"))
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{InputRequests: confirmRequest(), RequestState: token}, nil
		}
		s.finished.Add(1)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: answer(req.Params.InputResponses)}}}, nil
	})
	return s, srv
}

func connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestSDKAutomaticRetry: the SDK client answers the question and echoes
// the sealed state; the server opens it on tools, prompts and resources.
func TestSDKAutomaticRetry(t *testing.T) {
	s, srv := newConfirmServer(t)
	cs := connect(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	ctx := t.Context()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "/srv/data"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "confirmed /srv/data" {
		t.Errorf("tool: %q", got)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"file": "a.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "confirmed" {
		t.Errorf("prompt: %q", got)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///report.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Contents[0].Text; got != "confirmed" {
		t.Errorf("resource: %q", got)
	}
	if s.finished.Load() != 3 || s.refused.Load() != 0 {
		t.Errorf("finished %d, refused %d", s.finished.Load(), s.refused.Load())
	}
}

// TestSDKRefusedState: a client that changes the state, the arguments, the
// target or the method gets -32602 "Invalid or expired requestState", and
// the flow does not go on.
func TestSDKRefusedState(t *testing.T) {
	s, srv := newConfirmServer(t)
	cs := connect(t, srv, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx := t.Context()

	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "/srv/data"}})
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first round: %+v", first)
	}
	token := first.RequestState
	yes := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}
	tampered := []byte(token)
	if i := len(tampered) / 2; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}

	tests := []struct {
		name string
		call func() error
		want requeststate.Reason
	}{
		{"tampered", func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "/srv/data"}, InputResponses: yes, RequestState: string(tampered)})
			return err
		}, requeststate.ReasonTampered},
		{"unsealed", func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "/srv/data"}, InputResponses: yes, RequestState: "asked:confirm"})
			return err
		}, requeststate.ReasonMalformed},
		{"other arguments", func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "/"}, InputResponses: yes, RequestState: token})
			return err
		}, requeststate.ReasonArguments},
		{"other method", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", InputResponses: yes, RequestState: token})
			return err
		}, requeststate.ReasonMethod},
		{"other method, resource", func() error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///report.txt", InputResponses: yes, RequestState: token})
			return err
		}, requeststate.ReasonMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
			}
			if we.Code != -32602 || we.Message != "Invalid or expired requestState" || len(we.Data) != 0 {
				t.Errorf("wire error = %+v", we)
			}
			if got := <-s.reasons; got != tt.want {
				t.Errorf("logged reason %q, want %q", got, tt.want)
			}
			if strings.Contains(err.Error(), string(tt.want)) {
				t.Errorf("the client sees the reason: %v", err)
			}
		})
	}

	// The genuine retry still works, with the arguments in another order.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_folder", Arguments: json.RawMessage(`{ "path" : "/srv/data" }`), InputResponses: yes, RequestState: token})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "confirmed /srv/data" {
		t.Errorf("genuine retry: %q", got)
	}
	if s.finished.Load() != 1 || s.refused.Load() != int32(len(tests)) {
		t.Errorf("finished %d, refused %d", s.finished.Load(), s.refused.Load())
	}
}
