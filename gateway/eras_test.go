package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

// Protocol versions of the two eras.
const (
	modern = "2026-07-28"
	legacy = "2025-11-25"
)

// serveEra serves s over streamable HTTP in one era: modern serves both
// eras on one URL (the gateway's probe picks 2026-07-28); legacy serves a
// stateful handler only, which refuses server/discover, so the gateway
// falls back to initialize.
func serveEra(t testing.TB, s *mcp.Server, era string) string {
	t.Helper()
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	if era == modern {
		return serveHTTP(t, endpoint.NewHandler(s, nil))
	}
	return serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// foldersRoot makes a directory for the folders example: full/ with
// content (deleting it asks), empty/ (deleting it does not), and old/ to
// rename.
func foldersRoot(t testing.TB) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"full/a.txt", "full/b/c.txt", "old/x.txt"} {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

// answers is a scripted elicitation handler: it answers a form by the
// properties it asks for, and records the messages.
type answers struct {
	mu   sync.Mutex
	seen []string
}

func (a *answers) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.seen = append(a.seen, req.Params.Message)
	a.mu.Unlock()
	schema, _ := json.Marshal(req.Params.RequestedSchema)
	switch s := string(schema); {
	case strings.Contains(s, `"delete"`):
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"delete": true}}, nil
	case strings.Contains(s, `"name"`):
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "renamed"}}, nil
	case strings.Contains(s, `"rename"`):
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"rename": true}}, nil
	}
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func (a *answers) messages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// connect connects a Go SDK client to url at version, answering questions
// with a.
func connect(t testing.TB, url, version string, a *answers, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if a != nil {
		opts.ElicitationHandler = a.elicit
	}
	c := resolve.NewClient(&mcp.Implementation{Name: "era-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// contentText joins the text contents of a tool result.
func contentText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestEras runs the same calls through the gateway for each combination of
// client era and upstream era: lists, a plain call, tools/resolve, a call
// that asks one question and a call that asks two in a row. The upstream's
// questions reach a 2026-07-28 client as input_required and a 2025-11-25
// client as requests, whichever way the upstream asked.
func TestEras(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{modern, legacy} {
		for _, clientEra := range []string{modern, legacy} {
			t.Run("upstream "+upEra+"/client "+clientEra, func(t *testing.T) {
				dir, root := foldersRoot(t)
				g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
					{Name: "files", URL: serveEra(t, filetool.NewServer(filesDir(t), nil), upEra)},
					{Name: "folders", URL: serveEra(t, foldertool.NewServer(root, nil), upEra)},
				}})
				for _, h := range g.Health().Upstreams {
					if h.Era != upEra {
						t.Fatalf("upstream %s connected at %s, want %s", h.Name, h.Era, upEra)
					}
				}
				a := &answers{}
				cs := connect(t, url, clientEra, a, nil)
				ctx := context.Background()

				var names []string
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tool.Name)
				}
				if want := []string{"files__manage_files", "folders__delete_folder", "folders__describe_folder", "folders__rename_folder"}; !slices.Equal(names, want) {
					t.Errorf("tools = %v, want %v", names, want)
				}

				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__manage_files", Arguments: map[string]any{"path": "notes.txt", "action": "read"}})
				if err != nil || res.IsError || contentText(t, res) != "hello from the files upstream\n" {
					t.Fatalf("manage_files read: %v %v", res, err)
				}

				// tools/resolve through the gateway: the upstream's own
				// resolution, within its bounds.
				for path, destructive := range map[string]bool{"empty": false, "full": true} {
					r, err := resolve.Resolve(ctx, cs, "folders__delete_folder", map[string]any{"path": path})
					if err != nil {
						t.Fatalf("resolve %s: %v", path, err)
					}
					if r.Annotations == nil || r.Annotations.DestructiveHint != destructive || r.Name != "folders__delete_folder" {
						t.Errorf("resolve delete_folder %s = %+v", path, r)
					}
				}

				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "folders__delete_folder", Arguments: map[string]any{"path": "full"}})
				if err != nil || contentText(t, res) != "deleted: full" {
					t.Fatalf("delete_folder full: %v %v", res, err)
				}
				if _, err := os.Stat(filepath.Join(dir, "full")); !os.IsNotExist(err) {
					t.Errorf("full/ still exists: %v", err)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "folders__rename_folder", Arguments: map[string]any{"path": "old"}})
				if err != nil || res.IsError {
					msg := ""
					if res != nil {
						msg = contentText(t, res)
					}
					t.Fatalf("rename_folder old: %v %q", err, msg)
				}
				if _, err := os.Stat(filepath.Join(dir, "renamed", "x.txt")); err != nil {
					t.Errorf("old/ was not renamed: %v (%s)", err, contentText(t, res))
				}
				if got := a.messages(); len(got) != 3 || !strings.HasPrefix(got[0], "Delete full and the 2 entries") || !strings.HasPrefix(got[1], "New name for old") {
					t.Errorf("questions asked: %q", got)
				}
			})
		}
	}
}

// TestModernClientQuestionsOnTheWire checks, as a raw 2026-07-28 client,
// what an upstream's question looks like through the gateway for each
// upstream era: input_required with the question under its key, and a
// requestState of the gateway's own that refuses tampering and other
// arguments, then completes when the answer comes with it.
func TestModernClientQuestionsOnTheWire(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{modern, legacy} {
		t.Run("upstream "+upEra, func(t *testing.T) {
			dir, root := foldersRoot(t)
			_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
				{Name: "folders", URL: serveEra(t, foldertool.NewServer(root, nil), upEra)},
			}})
			p := wiretest.Stateless(url, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})
			call := func(args map[string]any, responses map[string]any, state string) *wiretest.Response {
				params := map[string]any{"name": "delete_folder", "arguments": args}
				if responses != nil {
					params["inputResponses"] = responses
				}
				if state != "" {
					params["requestState"] = state
				}
				return p.Call(t, "tools/call", params)
			}
			r := call(map[string]any{"path": "full"}, nil, "")
			if r.Error != nil || r.Result["resultType"] != "input_required" {
				t.Fatalf("first call: %s", r.Raw)
			}
			asks := r.Result["inputRequests"].(map[string]any)
			if len(asks) != 1 {
				t.Fatalf("inputRequests = %v", asks)
			}
			var key string
			for k, v := range asks {
				key = k
				if m := v.(map[string]any); m["method"] != "elicitation/create" {
					t.Errorf("question %s = %v", k, v)
				}
			}
			wantKey := "confirm_delete" // the upstream's own key
			if upEra == legacy {
				wantKey = "elicitation/create#1" // a request in the middle of the call
			}
			if key != wantKey {
				t.Errorf("key = %q, want %q", key, wantKey)
			}
			state := r.Result["requestState"].(string)
			answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"delete": true}}}

			// Tampered state and state replayed for other arguments are
			// refused without reaching the upstream.
			tampered := []byte(state)
			tampered[len(tampered)/2] ^= 1
			if r := call(map[string]any{"path": "full"}, answer, string(tampered)); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("tampered state: %s", r.Raw)
			}
			if r := call(map[string]any{"path": "old"}, answer, state); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("state for other arguments: %s", r.Raw)
			}
			if _, err := os.Stat(filepath.Join(dir, "full")); err != nil {
				t.Fatalf("full/ is gone before the answer: %v", err)
			}

			r = call(map[string]any{"path": "full"}, answer, state)
			if r.Error != nil || r.Result["resultType"] != "complete" || !strings.Contains(string(r.Raw), "deleted: full") {
				t.Fatalf("answered call: %s", r.Raw)
			}
			if _, err := os.Stat(filepath.Join(dir, "full")); !os.IsNotExist(err) {
				t.Errorf("full/ still exists: %v", err)
			}
			if upEra == legacy {
				// The parked call was taken by the answer: the same state
				// cannot resume it twice.
				if r := call(map[string]any{"path": "full"}, answer, state); r.Error == nil || r.Error.Code != -32602 {
					t.Errorf("state reused after the call ended: %s", r.Raw)
				}
			}
		})
	}
}

// TestNamespacedKeys checks that an upstream's inputRequests key that looks
// like one of the gateway's own is escaped on the way to the client and
// unescaped on the way back.
func TestNamespacedKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"preflight/confirm", approval.InputKey} {
		t.Run(key, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "keys"}, nil)
			s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult); ok {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered " + r.Action}}}, nil
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: &mcp.ElicitParams{Message: "ok?", RequestedSchema: map[string]any{"type": "object"}}}, RequestState: "s1"}, nil
			})
			_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "keys", URL: serveEra(t, s, modern)}}})
			p := wiretest.Stateless(url, map[string]any{"elicitation": map[string]any{}})
			r := p.Call(t, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
			asks, _ := r.Result["inputRequests"].(map[string]any)
			if _, ok := asks["upstream/"+key]; !ok || len(asks) != 1 {
				t.Fatalf("inputRequests = %v; want the key escaped as upstream/%s", asks, key)
			}
			r = p.Call(t, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{},
				"inputResponses": map[string]any{"upstream/" + key: map[string]any{"action": "decline"}},
				"requestState":   r.Result["requestState"]})
			if !strings.Contains(string(r.Raw), "answered decline") {
				t.Errorf("answer under the escaped key: %s", r.Raw)
			}
		})
	}
}

// TestResolveShapes checks that the gateway serves tools/resolve in both
// shapes for a tool whose upstream does not resolve anything: the static
// annotations, under the tool's exposed name.
func TestResolveShapes(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "plain"}, nil)
	f := false
	s.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, nil
	})
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "plain", URL: serveEra(t, s, modern)}}})
	for _, version := range []string{modern, legacy} {
		ext := wiretest.Peer{URL: url, Version: version, Capabilities: wiretest.WithExtension(preflight.ExtensionToolResolution)}
		r := ext.Call(t, "tools/resolve", map[string]any{"name": "lookup", "arguments": map[string]any{"q": "a"}})
		// Static: read-only and closed-world as declared, the other two
		// at their defaults.
		want := map[string]any{"readOnlyHint": true, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}
		if got, _ := r.Result["annotations"].(map[string]any); fmt.Sprint(got) != fmt.Sprint(want) || r.Result["name"] != "lookup" {
			t.Errorf("%s extension shape: %s", version, r.Raw)
		}
		r = ext.Call(t, "tools/resolve", map[string]any{"name": "lookup", "arguments": map[string]any{}})
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s arguments the schema refuses: %s", version, r.Raw)
		}
		ext.Close()

		seed := wiretest.Peer{URL: url, Version: version}
		r = seed.Call(t, "tools/resolve", map[string]any{"name": "lookup", "arguments": map[string]any{"q": "a"}})
		tool, _ := r.Result["tool"].(map[string]any)
		if tool["name"] != "lookup" || tool["resolve"] != true {
			t.Errorf("%s seed shape: %s", version, r.Raw)
		}
		r = seed.Call(t, "tools/list", nil)
		tools, _ := r.Result["tools"].([]any)
		if len(tools) != 1 || tools[0].(map[string]any)["resolve"] != true {
			t.Errorf("%s tools/list lacks the seed's marker: %s", version, r.Raw)
		}
		if _, marked := tools[0].(map[string]any)["_meta"]; marked {
			t.Errorf("%s tools/list carries the extension's marker for a client that did not declare it: %s", version, r.Raw)
		}
		seed.Close()
	}
}
