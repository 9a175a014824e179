package stage_test

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// directory is a fixed catalog with one upstream that is never
// connected: route only looks it up.
type directory struct {
	view *catalog.View
	conn *upstream.Conn
}

func (d directory) View() *catalog.View { return d.view }
func (d directory) Upstream(name string) (*upstream.Conn, bool) {
	if name == d.conn.Name() {
		return d.conn, true
	}
	return nil, false
}

func newDirectory(t *testing.T) directory {
	conn, err := upstream.New(upstream.Spec{Name: "up", URL: "http://127.0.0.1:1/mcp", Lazy: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := catalog.Build([]*catalog.Listing{{
		Upstream:  "up",
		Tools:     []*catalog.Tool{{Upstream: "up", Name: "read", Raw: json.RawMessage(`{"name":"read"}`), Tool: &mcp.Tool{Name: "read"}}},
		Prompts:   []*catalog.Prompt{{Upstream: "up", Name: "greet", Raw: json.RawMessage(`{"name":"greet"}`)}},
		Resources: []*catalog.Resource{{Upstream: "up", URI: "file:///a"}},
	}, {Upstream: "other"}}, true)
	return directory{view: v, conn: conn}
}

func TestRoute(t *testing.T) {
	d := newDirectory(t)
	var got *call.Call
	final := call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		got = c
		return nil, nil
	})
	h := chain(final, &stage.Route{Dir: d})
	for _, tc := range []struct {
		method, name string
		code         int64
		target       string
	}{
		{call.ToolsCall, "up__read", 0, "read"},
		{call.ToolsCall, "read", jsonrpc.CodeInvalidParams, ""},
		{call.PromptsGet, "up__greet", 0, "greet"},
		{call.PromptsGet, "up__nope", jsonrpc.CodeInvalidParams, ""},
		{call.ResourcesRead, "file:///a", 0, "file:///a"},
		{call.ResourcesRead, "file:///b", mcp.CodeResourceNotFound, ""},
		{"tools/list", "x", jsonrpc.CodeMethodNotFound, ""},
	} {
		got = nil
		_, err := h.Serve(context.Background(), &call.Call{Method: tc.method, Name: tc.name, Client: &call.Client{}})
		var we *jsonrpc.Error
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s %s: %v", tc.method, tc.name, err)
		case tc.code == 0 && (got == nil || got.Target != tc.target || got.Upstream.Name() != "up"):
			t.Errorf("%s %s: routed to %+v", tc.method, tc.name, got)
		case tc.code != 0 && (!errors.As(err, &we) || we.Code != tc.code):
			t.Errorf("%s %s: error %v, want code %d", tc.method, tc.name, err, tc.code)
		case tc.code != 0 && got != nil:
			t.Errorf("%s %s: an unroutable call went on", tc.method, tc.name)
		}
	}
}

// fixedResolver answers with r or err.
type fixedResolver struct {
	r   *call.Resolution
	err error
}

func (f fixedResolver) Resolve(context.Context, *stage.ResolveQuery) (*call.Resolution, error) {
	return f.r, f.err
}

func TestResolveStage(t *testing.T) {
	d := newDirectory(t)
	tool, _ := d.view.Tool("up__read")
	var got *call.Call
	final := call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) { got = c; return nil, nil })
	quiet := slog.New(slog.DiscardHandler)
	ro := &call.Resolution{Source: "rules"}
	ro.Annotations = preflight.Annotations{ReadOnlyHint: true}

	h := chain(final, &stage.Resolve{Resolver: fixedResolver{r: ro}, Logger: quiet})
	h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Tool: tool, Arguments: json.RawMessage(`{"a":1}`), Client: &call.Client{}})
	if got.Resolution != ro {
		t.Errorf("resolution = %+v", got.Resolution)
	}
	// A failing resolver leaves the static annotations; the call goes on.
	h = chain(final, &stage.Resolve{Resolver: fixedResolver{err: errors.New("down")}, Logger: quiet})
	got = nil
	h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Tool: tool, Client: &call.Client{}})
	if got == nil || got.Resolution.Source != "static" || got.Resolution.Annotations != preflight.DefaultAnnotations {
		t.Errorf("after a failure: %+v", got)
	}
	// Arguments that are not an object are refused before anything runs.
	got = nil
	_, err := h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Tool: tool, Arguments: json.RawMessage(`[1]`), Client: &call.Client{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || got != nil {
		t.Errorf("array arguments: %v", err)
	}
}

func TestLogRecord(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	d := newDirectory(t)
	final := call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		c.UpstreamEra, c.Outcome = "2025-11-25", "tool_error"
		return nil, nil
	})
	h := chain(final, &stage.Log{Logger: logger}, &stage.Route{Dir: d})
	h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Name: "up__read", Client: &call.Client{Version: "2026-07-28"}})
	h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Name: "nope", Client: &call.Client{Version: "2026-07-28"}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records: %s", len(lines), buf.String())
	}
	var ok, bad map[string]any
	json.Unmarshal([]byte(lines[0]), &ok)
	json.Unmarshal([]byte(lines[1]), &bad)
	for k, v := range map[string]any{"msg": "call", "server": "up", "tool": "up__read", "upstreamName": "read", "era": "2026-07-28", "upstreamEra": "2025-11-25", "outcome": "tool_error"} {
		if ok[k] != v {
			t.Errorf("record %s = %v, want %v (%s)", k, ok[k], v, lines[0])
		}
	}
	if _, has := ok["latencyMs"].(float64); !has {
		t.Errorf("no latency: %s", lines[0])
	}
	if bad["outcome"] != "error" || bad["code"] != float64(-32602) || bad["level"] != "WARN" {
		t.Errorf("failed call record: %s", lines[1])
	}
}

func TestUpstreamOrStaticBounds(t *testing.T) {
	f := false
	static := &call.Resolution{}
	static.Annotations = preflight.AnnotationsOf(&mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f})
	static.Hints = hints.Hints{Effect: hints.EffectWrite}
	for _, tc := range []struct {
		r    call.Resolution
		over []string
	}{
		{call.Resolution{}, nil}, // not destructive, closed world: within
		{func() call.Resolution {
			r := call.Resolution{}
			r.Annotations = preflight.Annotations{DestructiveHint: true}
			return r
		}(), []string{"destructiveHint"}},
		{func() call.Resolution {
			r := call.Resolution{}
			r.Annotations = preflight.Annotations{OpenWorldHint: true}
			r.Hints = hints.Hints{Effect: hints.EffectDelete}
			return r
		}(), []string{"openWorldHint", preflight.MetaEffect}},
	} {
		if got := stage.Exceeds(&tc.r, static); fmt.Sprint(got) != fmt.Sprint(tc.over) {
			t.Errorf("Exceeds(%+v) = %v, want %v", tc.r.Annotations, got, tc.over)
		}
	}
}

// TestResolveRefusesCaseVariants: an argument whose key differs from a
// property of the tool's schema only in case is refused before it is
// resolved, at any depth of the schema's properties; other unknown keys
// and the exact names pass.
func TestResolveRefusesCaseVariants(t *testing.T) {
	tool := &catalog.Tool{Upstream: "up", Name: "t", Tool: &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"action": map[string]any{"type": "string"},
		"opts":   map[string]any{"type": "object", "properties": map[string]any{"force": map[string]any{"type": "boolean"}}},
	}}}}
	h := chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }),
		&stage.Resolve{Resolver: stage.UpstreamOrStatic{}, Logger: slog.New(slog.DiscardHandler)})
	for args, refused := range map[string]string{
		`{"action":"read","opts":{"force":true},"extra":1}`: "",
		`{"Action":"delete"}`:                               "params.arguments.Action",
		`{"action":"read","opts":{"Force":true}}`:           "params.arguments.opts.Force",
	} {
		_, err := h.Serve(context.Background(), &call.Call{Method: call.ToolsCall, Tool: tool, Arguments: json.RawMessage(args), Client: &call.Client{}})
		var je *jsonrpc.Error
		switch {
		case refused == "" && err != nil:
			t.Errorf("%s: %v", args, err)
		case refused != "" && (!errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, refused)):
			t.Errorf("%s: %v, want -32602 naming %s", args, err, refused)
		}
	}
}
