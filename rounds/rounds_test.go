package rounds_test

//lint:file-ignore SA1019 rounds answers sampling and roots questions for servers that still ask them (deprecated by protocol 2026-07-28, SEP-2577).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/rounds"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	modern = "2026-07-28"
	legacy = "2025-11-25"
)

var eras = []string{modern, legacy}

// wireCall is one tools/call, prompts/get or resources/read as the server
// received it over HTTP.
type wireCall struct {
	ID       string // the JSON-RPC id, as raw JSON
	Method   string
	State    []byte   // params.requestState, decoded; nil if absent
	Answered []string // keys of params.inputResponses, sorted
}

// recorder wraps an MCP HTTP handler: it records the calls and may rewrite
// response bodies (serve with JSONResponse to get plain JSON bodies).
type recorder struct {
	h       http.Handler
	rewrite func([]byte) []byte

	mu    sync.Mutex
	calls []wireCall
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestState   *string                    `json:"requestState"`
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil {
			switch msg.Method {
			case "tools/call", "prompts/get", "resources/read":
				c := wireCall{ID: string(msg.ID), Method: msg.Method}
				if msg.Params.RequestState != nil {
					c.State = []byte(*msg.Params.RequestState)
				}
				for k := range msg.Params.InputResponses {
					c.Answered = append(c.Answered, k)
				}
				slices.Sort(c.Answered)
				rec.mu.Lock()
				rec.calls = append(rec.calls, c)
				rec.mu.Unlock()
			}
		}
	}
	if rec.rewrite == nil || r.Method != http.MethodPost {
		rec.h.ServeHTTP(w, r)
		return
	}
	rr := httptest.NewRecorder()
	rec.h.ServeHTTP(rr, r)
	body := rec.rewrite(rr.Body.Bytes())
	for k, v := range rr.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rr.Code)
	w.Write(body)
}

func (rec *recorder) Calls() []wireCall {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.calls)
}

// serve serves s over loopback HTTP through endpoint.NewHandler (both
// eras), with a recorder in front.
func serve(t testing.TB, s *mcp.Server, rewrite func([]byte) []byte) (*recorder, string) {
	t.Helper()
	var eopts *endpoint.Options
	if rewrite != nil {
		eopts = &endpoint.Options{JSONResponse: true}
	}
	rec := &recorder{h: endpoint.NewHandler(s, eopts), rewrite: rewrite}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	return rec, hs.URL
}

// connect connects a rounds client to url in the given era.
func connect(t testing.TB, url, era string, opts *mcp.ClientOptions, ropts *rounds.Options) *mcp.ClientSession {
	t.Helper()
	c := rounds.NewClient(&mcp.Implementation{Name: "rounds-test", Version: "v0"}, opts, ropts)
	var sopts *mcp.ClientSessionOptions
	if era != modern {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: era}
	}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content: %d items, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	if res.IsError {
		t.Fatalf("tool error: %s", tc.Text)
	}
	return tc.Text
}

var objectSchema = map[string]any{"type": "object"}

// form is a one-field string form.
var form = map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}}

func elicit(msg string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: form}
}

// echoElicit answers a form with v set to the question's message.
func echoElicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": req.Params.Message}}, nil
}

func sampleEcho(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	tc, _ := req.Params.Messages[0].Content.(*mcp.TextContent)
	return &mcp.CreateMessageResult{Role: "assistant", Model: "echo", Content: &mcp.TextContent{Text: "re: " + tc.Text}}, nil
}

// askOnce returns a tool handler that asks asks on the first request and,
// on the retry, returns the answers as text.
func askOnce(asks mcp.InputRequestMap) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.InputResponses == nil {
			return &mcp.CallToolResult{InputRequests: asks, RequestState: "s1"}, nil
		}
		var lines []string
		for k, r := range req.Params.InputResponses {
			switch r := r.(type) {
			case *mcp.ElicitResult:
				lines = append(lines, fmt.Sprintf("%s=%s:%v", k, r.Action, r.Content["v"]))
			case *mcp.ListRootsResult:
				var uris []string
				for _, root := range r.Roots {
					uris = append(uris, root.URI)
				}
				lines = append(lines, fmt.Sprintf("%s=roots:%s", k, strings.Join(uris, ",")))
			case *mcp.CreateMessageWithToolsResult:
				tc, _ := r.Content[0].(*mcp.TextContent)
				lines = append(lines, fmt.Sprintf("%s=model:%s", k, tc.Text))
			default:
				lines = append(lines, fmt.Sprintf("%s=%T", k, r))
			}
		}
		slices.Sort(lines)
		return text(strings.Join(lines, " ")), nil
	}
}

func newServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "scripted", Version: "v0"}, nil)
}

// folders serves the folders example on a tree with an empty folder and a
// full one.
func folders(t *testing.T) (dir string, rec *recorder, url string) {
	t.Helper()
	dir = t.TempDir()
	for _, p := range []string{"empty", "full/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rec, url = serve(t, foldertool.NewServer(root, nil), nil)
	return dir, rec, url
}

func exists(dir, p string) bool {
	_, err := os.Stat(filepath.Join(dir, p))
	return err == nil
}

// distinctIDs fails unless every recorded call has its own id.
func distinctIDs(t *testing.T, calls []wireCall) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		if c.ID == "" || c.ID == "null" {
			t.Errorf("call without id: %+v", c)
		}
		if seen[c.ID] {
			t.Errorf("id %s used twice in %+v", c.ID, calls)
		}
		seen[c.ID] = true
	}
}

// TestFoldersDelete: delete_folder's confirmation is answered by the one
// ElicitationHandler in both eras; under 2026-07-28 it takes two requests
// with distinct ids, the second answering the question under its key.
func TestFoldersDelete(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			dir, rec, url := folders(t)
			var asked []string
			var mu sync.Mutex
			cs := connect(t, url, era, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					key, inRound := rounds.InputKey(ctx)
					mu.Lock()
					asked = append(asked, fmt.Sprintf("%s %v %q", key, inRound, req.Params.Message))
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"delete": true}}, nil
				},
			}, nil)
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "full"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "deleted: full" {
				t.Errorf("result %q", got)
			}
			if exists(dir, "full") {
				t.Error("full still exists")
			}
			if len(asked) != 1 {
				t.Fatalf("asked %d times: %q", len(asked), asked)
			}
			if !strings.Contains(asked[0], "Delete full and the 2 entries") {
				t.Errorf("question: %s", asked[0])
			}
			calls := rec.Calls()
			if era == modern {
				if !strings.HasPrefix(asked[0], "confirm_delete true ") {
					t.Errorf("under 2026-07-28 the handler should see its key: %s", asked[0])
				}
				if len(calls) != 2 {
					t.Fatalf("%d requests, want 2: %+v", len(calls), calls)
				}
				if calls[0].Answered != nil || calls[0].State != nil {
					t.Errorf("first request carries answers or state: %+v", calls[0])
				}
				if !reflect.DeepEqual(calls[1].Answered, []string{"confirm_delete"}) || len(calls[1].State) == 0 {
					t.Errorf("retry: %+v", calls[1])
				}
				distinctIDs(t, calls)
			} else {
				if strings.HasPrefix(asked[0], "confirm_delete") || !strings.HasPrefix(asked[0], " false ") {
					t.Errorf("a legacy request has no key: %s", asked[0])
				}
				if len(calls) != 1 {
					t.Errorf("%d requests, want 1", len(calls))
				}
			}
		})
	}
}

// TestFoldersRenameChain: rename_folder asks twice, the second question
// built from the first answer; under 2026-07-28 that is three requests,
// each with a new id and the state of the previous result.
func TestFoldersRenameChain(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			dir, rec, url := folders(t)
			var questions []string
			cs := connect(t, url, era, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					questions = append(questions, req.Params.Message)
					if strings.HasPrefix(req.Params.Message, "New name") {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "renamed"}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"rename": true}}, nil
				},
			}, nil)
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "rename_folder", Arguments: map[string]any{"path": "full"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "renamed: full -> renamed" {
				t.Errorf("result %q", got)
			}
			if !exists(dir, "renamed/a.txt") {
				t.Error("not renamed")
			}
			want := []string{"New name for full?", "Rename full to renamed?"}
			if !reflect.DeepEqual(questions, want) {
				t.Errorf("questions %q, want %q", questions, want)
			}
			if era == modern {
				calls := rec.Calls()
				if len(calls) != 3 {
					t.Fatalf("%d requests, want 3", len(calls))
				}
				distinctIDs(t, calls)
			}
		})
	}
}

// TestFoldersDescribeSamples: describe_folder's sampling question reaches
// the CreateMessageHandler in both eras.
func TestFoldersDescribeSamples(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			_, _, url := folders(t)
			cs := connect(t, url, era, &mcp.ClientOptions{CreateMessageHandler: sampleEcho}, nil)
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "describe_folder", Arguments: map[string]any{"path": "full"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "re: Describe the folder full, which holds: a.txt, sub/" {
				t.Errorf("result %q", got)
			}
		})
	}
}

// TestSameKeys: every question of a round, of each kind, is answered under
// its own key, and only those keys are sent.
func TestSameKeys(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{
		"alpha": elicit("a?"),
		"beta":  elicit("b?"),
		"where": &mcp.ListRootsParams{},
		"model": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
	}))
	rec, url := serve(t, s, nil)
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit, CreateMessageHandler: sampleEcho},
		&rounds.Options{Roots: []*mcp.Root{{URI: "file:///srv/site", Name: "site"}}})
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	want := "alpha=accept:a? beta=accept:b? model=model:re: hi where=roots:file:///srv/site"
	if got := resultText(t, res); got != want {
		t.Errorf("server saw %q\nwant         %q", got, want)
	}
	calls := rec.Calls()
	if len(calls) != 2 || !reflect.DeepEqual(calls[1].Answered, []string{"alpha", "beta", "model", "where"}) {
		t.Errorf("calls: %+v", calls)
	}
}

// TestConcurrentAnswers: two questions of one round are answered at the
// same time: each handler waits for the other to start, which only works
// if both run at once.
func TestConcurrentAnswers(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"alpha": elicit("a?"), "beta": elicit("b?")}))
	_, url := serve(t, s, nil)
	started := map[string]chan struct{}{"alpha": make(chan struct{}), "beta": make(chan struct{})}
	other := map[string]string{"alpha": "beta", "beta": "alpha"}
	cs := connect(t, url, modern, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			key, _ := rounds.InputKey(ctx)
			close(started[key])
			select {
			case <-started[other[key]]:
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": key}}, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: %s never started: %w", key, other[key], ctx.Err())
			}
		},
	}, nil)
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "alpha=accept:alpha beta=accept:beta" {
		t.Errorf("result %q", got)
	}
}

// statefulTool returns a tool whose every result carries the next state of
// states; it fails the call if the client did not echo the previous one
// exactly. It asks one question per round until states run out.
func statefulTool(t *testing.T, states []string) mcp.ToolHandler {
	var round atomic.Int32
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := int(round.Add(1))
		if n > 1 {
			want := states[n-2]
			if got := req.Params.RequestState; got != want || !bytes.Equal([]byte(got), []byte(want)) {
				t.Errorf("round %d: state %q, want %q", n, got, want)
				return nil, errors.New("state not echoed")
			}
		}
		if n > len(states) {
			return text("done after " + strconv.Itoa(n) + " rounds"), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": elicit("?")}, RequestState: states[n-1]}, nil
	}
}

// TestRequestStateEchoed: requestState comes back byte for byte, checked by
// the server's tool and on the wire, whatever it holds.
func TestRequestStateEchoed(t *testing.T) {
	states := []string{
		`{"k":"v","n":[1,2.50,1e3]}  `,
		"<&>\u2028\u2029 é 🙂 \\\"\t\n" + strings.Repeat("x", 3),
		strings.Repeat("QUJD+/=", 10000), // ~70 KB
		" ",
	}
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "stateful", InputSchema: objectSchema}, statefulTool(t, states))
	rec, url := serve(t, s, nil)
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit}, nil)
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "stateful"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done after 5 rounds" {
		t.Errorf("result %q", got)
	}
	calls := rec.Calls()
	if len(calls) != 5 {
		t.Fatalf("%d requests, want 5", len(calls))
	}
	for i, c := range calls[1:] {
		if !bytes.Equal(c.State, []byte(states[i])) {
			t.Errorf("request %d on the wire: state %q, want %q", i+2, c.State, states[i])
		}
	}
	distinctIDs(t, calls)
}

// TestNewIDPerRetry: each request of a call has its own JSON-RPC id, and
// so do the requests of the next call on the same session.
func TestNewIDPerRetry(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "stateful", InputSchema: objectSchema}, statefulTool(t, []string{"a", "b", "c"}))
	s.AddTool(&mcp.Tool{Name: "once", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"q": elicit("?")}))
	rec, url := serve(t, s, nil)
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit}, nil)
	ctx := testContext(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stateful"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "once"}); err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	if len(calls) != 6 {
		t.Fatalf("%d requests, want 6", len(calls))
	}
	distinctIDs(t, calls)
}

// TestRoundBound: a server that never stops asking gets a clear error after
// MaxRounds requests (10 by default), naming the call and the keys.
func TestRoundBound(t *testing.T) {
	endless := func(stateOnly bool) mcp.ToolHandler {
		var n atomic.Int32
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			i := n.Add(1)
			if stateOnly {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: "busy"}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				fmt.Sprintf("q%d", i): elicit("?"), "again": elicit("?"),
			}, RequestState: "more"}, nil
		}
	}
	for _, tc := range []struct {
		name      string
		stateOnly bool
		max       int
		want      string
		pending   []string
	}{
		{"default", false, 0, `rounds: tools/call "endless": gave up after 10 rounds: the server still asked for input ["again" "q10"]`, []string{"again", "q10"}},
		{"max=3", false, 3, `rounds: tools/call "endless": gave up after 3 rounds: the server still asked for input ["again" "q3"]`, []string{"again", "q3"}},
		{"state-only", true, 4, `rounds: tools/call "endless": gave up after 4 rounds: the server still asked to retry later (input_required with no input requests)`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer()
			s.AddTool(&mcp.Tool{Name: "endless", InputSchema: objectSchema}, endless(tc.stateOnly))
			rec, url := serve(t, s, nil)
			cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit},
				&rounds.Options{MaxRounds: tc.max, Sleep: func(context.Context, time.Duration) error { return nil }})
			_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "endless"})
			var re *rounds.RoundsError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T), want *rounds.RoundsError", err, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant\n%s", err, tc.want)
			}
			if !reflect.DeepEqual(re.Pending, tc.pending) {
				t.Errorf("pending %q, want %q", re.Pending, tc.pending)
			}
			wantN := tc.max
			if wantN == 0 {
				wantN = rounds.DefaultMaxRounds
			}
			if n := len(rec.Calls()); n != wantN || re.Rounds != wantN {
				t.Errorf("%d requests, error says %d, want %d", n, re.Rounds, wantN)
			}
		})
	}
}

// TestPromptAndResourceRounds: prompts/get and resources/read run rounds
// too; the round bound names the prompt and the resource.
func TestPromptAndResourceRounds(t *testing.T) {
	s := newServer()
	s.AddPrompt(&mcp.Prompt{Name: "greeting"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if req.Params.InputResponses == nil {
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"name": elicit("Your name?")}, RequestState: "p"}, nil
		}
		if req.Params.RequestState != "p" {
			return nil, fmt.Errorf("state %q", req.Params.RequestState)
		}
		r := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Hello, %v", r.Content["v"])}}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "endless"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"again": elicit("?")}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://where", Name: "where"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if req.Params.InputResponses == nil {
			return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}, RequestState: "r"}, nil
		}
		r := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: r.Roots[0].URI}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://endless", Name: "endless"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"again": &mcp.ListRootsParams{}}}, nil
	})
	rec, url := serve(t, s, nil)
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": "Ada"}}, nil
	}}, &rounds.Options{MaxRounds: 2, Roots: []*mcp.Root{{URI: "file:///home/ada"}}})
	ctx := testContext(t)

	pp := &mcp.GetPromptParams{Name: "greeting"}
	pr, err := cs.GetPrompt(ctx, pp)
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "Hello, Ada" {
		t.Errorf("prompt %q", got)
	}
	if pp.InputResponses != nil || pp.RequestState != "" {
		t.Errorf("caller's prompt params modified: %+v", pp)
	}
	rp := &mcp.ReadResourceParams{URI: "test://where"}
	rr, err := cs.ReadResource(ctx, rp)
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Contents[0].Text; got != "file:///home/ada" {
		t.Errorf("resource %q", got)
	}
	if rp.InputResponses != nil || rp.RequestState != "" {
		t.Errorf("caller's resource params modified: %+v", rp)
	}

	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "endless"})
	if want := `rounds: prompts/get "endless": gave up after 2 rounds: the server still asked for input ["again"]`; err == nil || err.Error() != want {
		t.Errorf("prompt error %v, want %s", err, want)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://endless"})
	if want := `rounds: resources/read "test://endless": gave up after 2 rounds: the server still asked for input ["again"]`; err == nil || err.Error() != want {
		t.Errorf("resource error %v, want %s", err, want)
	}
	var methods []string
	for _, c := range rec.Calls() {
		methods = append(methods, c.Method)
	}
	want := []string{"prompts/get", "prompts/get", "resources/read", "resources/read", "prompts/get", "prompts/get", "resources/read", "resources/read"}
	if !reflect.DeepEqual(methods, want) {
		t.Errorf("requests %q, want %q", methods, want)
	}
}

// TestStateOnlyBackoff: a round with state and no questions waits before
// the retry, 50ms doubling to 1s; a round with questions resets the
// doubling. The sleeps are recorded, not slept.
func TestStateOnlyBackoff(t *testing.T) {
	// busy for 7 rounds, then a question, busy twice, then done.
	script := []string{"busy", "busy", "busy", "busy", "busy", "busy", "busy", "ask", "busy", "busy", "done"}
	var n atomic.Int32
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "busy", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		i := int(n.Add(1)) - 1
		if i > 0 && req.Params.RequestState != "st"+strconv.Itoa(i-1) {
			return nil, fmt.Errorf("round %d: state %q", i+1, req.Params.RequestState)
		}
		if got := len(req.Params.InputResponses); (i > 0 && script[i-1] == "ask") != (got == 1) {
			return nil, fmt.Errorf("round %d: %d answers", i+1, got)
		}
		switch script[i] {
		case "busy":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: "st" + strconv.Itoa(i)}, nil
		case "ask":
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": elicit("?")}, RequestState: "st" + strconv.Itoa(i)}, nil
		}
		return text("done"), nil
	})
	_, url := serve(t, s, nil)
	var slept []time.Duration
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit}, &rounds.Options{
		MaxRounds: len(script),
		Sleep: func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			return ctx.Err()
		},
	})
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done" {
		t.Errorf("result %q", got)
	}
	ms := time.Millisecond
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, 50 * ms, 100 * ms}
	if !reflect.DeepEqual(slept, want) {
		t.Errorf("slept %v, want %v", slept, want)
	}
}

// TestBackoffBoundedByContext: the default Sleep returns when the call's
// context ends, with the context's error, whatever the back-off says.
func TestBackoffBoundedByContext(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "busy", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: "later"}, nil
	})
	_, url := serve(t, s, nil)
	cs := connect(t, url, modern, nil, &rounds.Options{Backoff: func(int) time.Duration {
		cancel() // the caller gives up just as the wait starts
		return time.Hour
	}})
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "busy"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if want := `rounds: tools/call "busy": waiting 1h0m0s to retry after round 1: context canceled`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestHandlerErrorNamesKey: a handler's error fails the call with an error
// naming the key and the method, and cancels the round's other handlers.
func TestHandlerErrorNamesKey(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"alpha": elicit("a?"), "beta": elicit("b?")}))
	rec, url := serve(t, s, nil)
	boom := errors.New("boom")
	alphaSaw := make(chan error, 1)
	cs := connect(t, url, modern, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message == "b?" {
				return nil, boom
			}
			<-ctx.Done() // alpha waits until the round is cancelled
			alphaSaw <- context.Cause(ctx)
			return nil, ctx.Err()
		},
	}, nil)
	_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
	var ie *rounds.InputError
	if !errors.As(err, &ie) || !errors.Is(err, boom) {
		t.Fatalf("error %v (%T), want an *InputError wrapping boom", err, err)
	}
	if ie.Key != "beta" || ie.InputMethod != "elicitation/create" || ie.Name != "ask" {
		t.Errorf("error fields %+v", ie)
	}
	if want := `rounds: tools/call "ask": input request "beta" (elicitation/create): boom`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if cause := <-alphaSaw; !errors.Is(cause, boom) {
		t.Errorf("alpha was cancelled by %v, want beta's failure", cause)
	}
	if n := len(rec.Calls()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry after a failure)", n)
	}
}

// TestElicitationCheckedAsLegacy: an answer that does not fit the requested
// schema is refused by the SDK's own check, as for a legacy request.
func TestElicitationCheckedAsLegacy(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"n": elicit("?")}))
	_, url := serve(t, s, nil)
	cs := connect(t, url, modern, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": 42}}, nil
		},
	}, nil)
	_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
	var ie *rounds.InputError
	if !errors.As(err, &ie) || ie.Key != "n" || !strings.Contains(err.Error(), "does not match requested schema") {
		t.Fatalf("error %v", err)
	}
}

// TestMissingHandler: a question the client has no handler for fails the
// call at once with an error naming the option to set; no other question
// of the round is shown.
func TestMissingHandler(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{
		"confirm": elicit("sure?"),
		"model":   &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
	}))
	_, url := serve(t, s, nil)
	ctx := testContext(t)

	cs := connect(t, url, modern, nil, nil)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if want := `rounds: tools/call "ask": input request "confirm" (elicitation/create): the client has no handler for this input request (set mcp.ClientOptions.ElicitationHandler)`; err == nil || err.Error() != want {
		t.Errorf("no handlers: error %v\nwant %s", err, want)
	}
	if !errors.Is(err, rounds.ErrNoHandler) {
		t.Errorf("error does not wrap ErrNoHandler: %v", err)
	}

	var elicited atomic.Int32
	cs = connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		elicited.Add(1)
		return echoElicit(ctx, req)
	}}, nil)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if want := `rounds: tools/call "ask": input request "model" (sampling/createMessage): the client has no handler for this input request (set mcp.ClientOptions.CreateMessageHandler or CreateMessageWithToolsHandler)`; err == nil || err.Error() != want {
		t.Errorf("no sampling handler: error %v\nwant %s", err, want)
	}
	if n := elicited.Load(); n != 0 {
		t.Errorf("the user was asked %d times before the call failed", n)
	}
}

// TestUnknownInputMethod: a question with a method the client does not know
// is an error naming the call (the server here is the SDK's, with the
// method renamed on the wire).
func TestUnknownInputMethod(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"q": elicit("?")}))
	_, url := serve(t, s, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"method":"elicitation/create"`), []byte(`"method":"elicitation/telepathy"`))
	})
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: echoElicit}, nil)
	_, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "ask"})
	if !errors.Is(err, rounds.ErrUnknownInputMethod) {
		t.Fatalf("error %v, want ErrUnknownInputMethod", err)
	}
	for _, want := range []string{`tools/call "ask"`, `elicitation/telepathy`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}

// TestRootsBothEras: roots/list is answered from the client's roots in both
// eras: Options.Roots, and roots added to the client later.
func TestRootsBothEras(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "where", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}))
	_, url := serve(t, s, nil)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			c := rounds.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil, &rounds.Options{Roots: []*mcp.Root{{URI: "file:///a"}}})
			c.AddRoots(&mcp.Root{URI: "file:///b"})
			var sopts *mcp.ClientSessionOptions
			if era != modern {
				sopts = &mcp.ClientSessionOptions{ProtocolVersion: era}
			}
			cs, err := c.Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: url}, sopts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "where"})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "roots=roots:file:///a,file:///b" {
				t.Errorf("result %q", got)
			}
		})
	}
}

// TestCallerParamsUntouched: the caller's params never carry a round's
// answers or state, so they can be reused for a new call, which asks anew.
func TestCallerParamsUntouched(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, askOnce(mcp.InputRequestMap{"q": elicit("?")}))
	_, url := serve(t, s, nil)
	var asked atomic.Int32
	cs := connect(t, url, modern, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return echoElicit(ctx, req)
	}}, nil)
	p := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"x": 1}}
	for i := range 2 {
		if _, err := cs.CallTool(testContext(t), p); err != nil {
			t.Fatal(err)
		}
		if p.InputResponses != nil || p.RequestState != "" {
			t.Fatalf("call %d: params modified: %+v", i+1, p)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times, want 2", n)
	}
}

// TestPlainCallsPassThrough: calls that need no input, errors of the first
// request and other methods are exactly what a plain client sees.
func TestPlainCallsPassThrough(t *testing.T) {
	s := newServer()
	s.AddTool(&mcp.Tool{Name: "plain", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("ok"), nil
	})
	rec, url := serve(t, s, nil)
	cs := connect(t, url, modern, nil, nil)
	ctx := testContext(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "ok" || res.NeedsInput() {
		t.Errorf("result %q, needs input %v", got, res.NeedsInput())
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nosuch"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || strings.HasPrefix(err.Error(), "rounds:") {
		t.Errorf("unknown tool: error %v (%T), want the SDK's unwrapped JSON-RPC error", err, err)
	}
	if n := len(rec.Calls()); n != 2 {
		t.Errorf("%d calls on the wire, want 2", n)
	}
}

// TestOptionsNotModified: NewClient copies the options it is given.
func TestOptionsNotModified(t *testing.T) {
	opts := &mcp.ClientOptions{ElicitationHandler: echoElicit}
	ropts := &rounds.Options{Roots: []*mcp.Root{{URI: "file:///a"}}}
	rounds.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, opts, ropts)
	if opts.MultiRoundTrip != nil {
		t.Errorf("opts.MultiRoundTrip set to %+v", opts.MultiRoundTrip)
	}
	if ropts.MaxRounds != 0 || ropts.Backoff != nil || ropts.Sleep != nil {
		t.Errorf("ropts modified: %+v", ropts)
	}
}

func TestDefaultBackoff(t *testing.T) {
	ms := time.Millisecond
	for n, want := range map[int]time.Duration{0: 0, 1: 50 * ms, 2: 100 * ms, 5: 800 * ms, 6: time.Second, 7: time.Second, 1000: time.Second} {
		if got := rounds.DefaultBackoff(n); got != want {
			t.Errorf("DefaultBackoff(%d) = %v, want %v", n, got, want)
		}
	}
}
