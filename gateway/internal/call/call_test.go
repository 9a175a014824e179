package call_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// trace is a stage that records the order calls pass through.
type trace struct {
	name    string
	methods []string
	log     *[]string
}

func (s *trace) Name() string { return s.name }

func (s *trace) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	*s.log = append(*s.log, s.name+">")
	res, err := next.Serve(ctx, c)
	*s.log = append(*s.log, "<"+s.name)
	return res, err
}

// scoped is a trace that applies to some methods only.
type scoped struct{ trace }

func (s *scoped) Methods() []string { return s.methods }

func TestCompile(t *testing.T) {
	t.Parallel()
	var log []string
	final := call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		log = append(log, "forward:"+c.Method)
		return json.RawMessage(`{}`), nil
	})
	ch := call.Compile(map[string]call.Handler{call.ToolsCall: final, call.PromptsGet: final},
		&trace{name: "route", log: &log},
		&scoped{trace{name: "decide", methods: []string{call.ToolsCall}, log: &log}},
		&trace{name: "redact", log: &log})
	if got := strings.Join(ch.Order(call.ToolsCall), " "); got != "route decide redact" {
		t.Errorf("order of tools/call: %s", got)
	}
	if got := strings.Join(ch.Order(call.PromptsGet), " "); got != "route redact" {
		t.Errorf("order of prompts/get: %s", got)
	}
	ch.Serve(context.Background(), &call.Call{Method: call.ToolsCall})
	if got := strings.Join(log, " "); got != "route> decide> redact> forward:tools/call <redact <decide <route" {
		t.Errorf("tools/call crossed: %s", got)
	}
	log = nil
	ch.Serve(context.Background(), &call.Call{Method: call.PromptsGet})
	if got := strings.Join(log, " "); got != "route> redact> forward:prompts/get <redact <route" {
		t.Errorf("prompts/get crossed: %s", got)
	}
	if _, err := ch.Serve(context.Background(), &call.Call{Method: "tools/list"}); err == nil {
		t.Error("a method without a chain was served")
	}
}

func TestCompileRefusesTwoNames(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("two stages named alike were compiled")
		}
	}()
	var log []string
	call.Compile(nil, &trace{name: "a", log: &log}, &trace{name: "a", log: &log})
}

func TestForClient(t *testing.T) {
	t.Parallel()
	modern := &call.Client{Version: "2026-07-28"}
	legacy := &call.Client{Version: "2025-11-25"}
	for _, tc := range []struct {
		client   *call.Client
		in, want string
	}{
		{modern, `{"content":[]}`, `{"content":[],"resultType":"complete"}`},
		{modern, `{"resultType":"input_required","requestState":"s"}`, `{"resultType":"input_required","requestState":"s"}`},
		{legacy, `{"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{legacy, `{"content":[1.50]}`, `{"content":[1.50]}`},
	} {
		if got := string(call.ForClient(tc.client, json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("ForClient(%s, %s) = %s, want %s", tc.client.Version, tc.in, got, tc.want)
		}
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	c := &call.Call{Method: call.ToolsCall, Arguments: json.RawMessage(`{"a":1}`)}
	a, err := c.Args()
	if err != nil || a["a"] != float64(1) {
		t.Errorf("Args = %v, %v", a, err)
	}
	c = &call.Call{Method: call.ToolsCall, Arguments: json.RawMessage(`[1]`)}
	if _, err := c.Args(); err == nil {
		t.Error("an array was taken for arguments")
	}
	c = &call.Call{Method: call.ToolsCall}
	if a, err := c.Args(); err != nil || a == nil || len(a) != 0 {
		t.Errorf("no arguments = %v, %v", a, err)
	}
}

func ExampleCompile() {
	forward := call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		fmt.Println("forward", c.Name)
		return json.RawMessage(`{"content":[]}`), nil
	})
	ch := call.Compile(map[string]call.Handler{call.ToolsCall: forward}, hello{})
	res, _ := ch.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Name: "files__read"})
	fmt.Println(string(res))
	// Output:
	// hello files__read
	// forward files__read
	// {"content":[]}
}

// hello is a stage that greets every call.
type hello struct{}

func (hello) Name() string { return "hello" }

func (hello) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	fmt.Println("hello", c.Name)
	return next.Serve(ctx, c)
}

func TestRawMergesMeta(t *testing.T) {
	t.Parallel()
	r := call.NewRaw(json.RawMessage(`{"content":[],"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`))
	r.Meta = mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "gw"}, "b": true}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Meta map[string]any `json:"_meta"`
	}
	json.Unmarshal(b, &got)
	if got.Meta["a"] != float64(1) || got.Meta["b"] != true || got.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any)["name"] != "up" {
		t.Errorf("merged _meta: %s", b)
	}
	r = call.NewRaw(json.RawMessage(`{"content":[]}`))
	r.Meta = mcp.Meta{"b": true}
	if b, _ := json.Marshal(r); !strings.Contains(string(b), `"_meta":{"b":true}`) {
		t.Errorf("added _meta: %s", b)
	}
	if b, _ := json.Marshal(call.NewRaw(json.RawMessage(`{"x":1.50}`))); string(b) != `{"x":1.50}` {
		t.Errorf("untouched body: %s", b)
	}
}
