package requeststate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/requeststate"
)

func Example() {
	// Replicas share keys from configuration; the first key seals.
	ring, err := requeststate.NewRing([]requeststate.Key{
		{ID: "k2", Secret: []byte("example secret: use 32 random bytes in production")},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The first round of delete_folder({"path": "/srv/data"}) asks a question
	// and seals what it asked.
	args, _ := requeststate.ArgumentsDigest(map[string]any{"path": "/srv/data"})
	b := requeststate.Binding{
		Method:    requeststate.MethodCallTool,
		Target:    "delete_folder",
		Arguments: args,
		Audience:  "folders",
		Principal: "alice",
	}
	token, err := ring.Seal(b, []byte(`{"asked":["confirm"]}`))
	if err != nil {
		log.Fatal(err)
	}

	// The retry echoes the token with the same arguments, in any order.
	payload, err := ring.Open(token, b)
	fmt.Printf("%s %v\n", payload, err)

	// Replayed for other arguments, the token is refused.
	other := b
	other.Arguments, _ = requeststate.ArgumentsDigest(map[string]any{"path": "/"})
	_, err = ring.Open(token, other)
	fmt.Println("log:", requeststate.ReasonOf(err))
	fmt.Println("wire:", requeststate.WireError(err))

	// Output:
	// {"asked":["confirm"]} <nil>
	// log: other arguments
	// wire: Invalid or expired requestState
}

func ExampleArgumentsDigest() {
	a, _ := requeststate.ArgumentsDigest(map[string]any{"path": "/srv", "limit": 10})
	b, _ := requeststate.ArgumentsDigest(json.RawMessage(`{ "limit": 1e1, "path": "/srv" }`))
	c, _ := requeststate.ArgumentsDigest(json.RawMessage(`{"limit":10,"path":"/"}`))
	fmt.Println(a == b, a == c, len(a))
	// Output: true false 43
}

// A hand-written input_required flow on a tool: open the state of the
// retry, or seal the state of a new question.
func ExampleRing_OpenRequest() {
	ring, err := requeststate.RingFromEnv("", nil) // PREFLIGHT_REQUEST_STATE_KEYS, or a random key
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "folders", Version: "1"}, nil)
	type args struct {
		Path string `json:"path"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "delete_folder"}, func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		state, err := ring.OpenRequest(req, "folders")
		if err != nil {
			slog.Warn("requestState refused", "tool", req.Params.Name, "reason", requeststate.ReasonOf(err), "err", err)
			return nil, nil, requeststate.WireError(err) // -32602 "Invalid or expired requestState"
		}
		if state == nil { // first round
			token, err := ring.SealRequest(req, "folders", []byte("asked:confirm"))
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Delete " + in.Path + "?"}},
				RequestState:  token,
			}, nil, nil
		}
		// A retry with the state sealed above: use req.Params.InputResponses.
		return &mcp.CallToolResult{}, nil, nil
	})
}
