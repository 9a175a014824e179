package disclose_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// eras are the two protocol eras every wire test runs in.
var eras = []string{"2025-11-25", "2026-07-28"}

// GetDataArgs are get_data's arguments (seed 004 section 11.3).
type GetDataArgs struct {
	Query string `json:"query,omitempty" jsonschema:"Search query to filter results"`
	Limit int    `json:"limit,omitempty" jsonschema:"Maximum number of results (default: 50, max: 500)"`
	Sort  string `json:"sort,omitempty" jsonschema:"Sort order for results"`
}

// getDataDetails are get_data's examples and guidance.
var getDataDetails = &disclose.Details{
	Examples: []disclose.Example{
		{Description: "Basic query", Input: map[string]any{"query": "search term", "limit": 10}},
		{Description: "Sorted results", Input: map[string]any{"query": "search term", "sort": "desc"}},
	},
	UsageGuidance: map[string]any{"pagination": "Use limit to page; at most 500 results."},
	ErrorGuidance: map[string]any{"INVALID_SORT": "sort must be asc or desc."},
}

const getDataDescription = "Retrieves data from the system with comprehensive filtering, sorting, and pagination capabilities. " +
	"Use query for full-text search, limit to bound the results and sort to order them."

// newMCPServer returns a server with get_data (typed, with details) and
// echo (raw, without).
func newMCPServer(t testing.TB, opts *disclose.Options) (*mcp.Server, *disclose.Server) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "disclose-test", Version: "v0"}, &mcp.ServerOptions{Instructions: "Base instructions."})
	ds := disclose.New(s, opts)
	addTools(ds)
	return s, ds
}

func addTools(ds *disclose.Server) {
	disclose.AddTool(ds, &mcp.Tool{
		Name:        "get_data",
		Description: getDataDescription,
		Annotations: &mcp.ToolAnnotations{Title: "Get data", ReadOnlyHint: true},
		Meta:        mcp.Meta{"mcp.dev/effect": "read"},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in GetDataArgs) (*mcp.CallToolResult, any, error) {
		return text("data for " + in.Query), nil, nil
	}, getDataDetails)
	ds.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "Echoes back the input string.\n\nUseful for testing.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"the text to echo"}},"required":["message"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return text(in.Message), nil
	}, nil)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// serve serves s over HTTP in both eras. A request whose URL has
// ?token=NAME is authenticated as principal NAME through the SDK's bearer
// token middleware (the token travels in the Authorization header, as the
// middleware requires); other requests are anonymous.
func serve(t testing.TB, s *mcp.Server) string {
	t.Helper()
	h := endpoint.NewHandler(s, &endpoint.Options{JSONResponse: true})
	srv := httptest.NewServer(withPrincipals(h))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// withPrincipals authenticates ?token=NAME requests as principal NAME.
func withPrincipals(h http.Handler) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		name, ok := strings.CutPrefix(token, "tok-")
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: name, Expiration: time.Now().Add(time.Hour)}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("token"); tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer tok-"+tok)
			authed.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// peer returns a raw client in era; under 2026-07-28 it is principal
// (empty: anonymous), under legacy its own session.
func peer(t testing.TB, url, era, principal string) *wiretest.Peer {
	t.Helper()
	if principal != "" {
		url += "?token=" + principal
	}
	p := &wiretest.Peer{URL: url, Version: era}
	t.Cleanup(p.Close)
	return p
}

func read(t testing.TB, p *wiretest.Peer, uri string) *wiretest.Response {
	t.Helper()
	return p.Call(t, "resources/read", map[string]any{"uri": uri})
}

// readMap reads uri and decodes the one text content as a JSON object.
func readMap(t testing.TB, p *wiretest.Peer, uri string) (map[string]any, map[string]any) {
	t.Helper()
	r := read(t, p, uri)
	if r.Error != nil {
		t.Fatalf("read %s: %+v", uri, r.Error)
	}
	contents := r.Result["contents"].([]any)
	if len(contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(contents))
	}
	c := contents[0].(map[string]any)
	if c["uri"] != uri || c["mimeType"] != "application/json" {
		t.Errorf("read %s: content uri %v, mimeType %v", uri, c["uri"], c["mimeType"])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(c["text"].(string)), &m); err != nil {
		t.Fatalf("read %s: text is not a JSON object: %v", uri, err)
	}
	meta, _ := c["_meta"].(map[string]any)
	return m, meta
}

func call(t testing.TB, p *wiretest.Peer, name string, args map[string]any) *wiretest.Response {
	t.Helper()
	return p.Call(t, "tools/call", map[string]any{"name": name, "arguments": args})
}

// refusal returns the extension error of a refused call, failing the
// test if the call was not refused with a tool error.
func refusal(t testing.TB, r *wiretest.Response) map[string]any {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("call: JSON-RPC error %+v, want a tool error", r.Error)
	}
	if r.Result["isError"] != true {
		t.Fatalf("call: not refused: %s", r.Raw)
	}
	sc, _ := r.Result["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	if e == nil {
		t.Fatalf("call: no structuredContent.error: %s", r.Raw)
	}
	// The text content is the same object, for models that read text only.
	var fromText map[string]any
	content := r.Result["content"].([]any)
	if err := json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &fromText); err != nil || fromText["error"] == nil {
		t.Errorf("call: text content is not the error object: %v", content)
	}
	return e
}

// succeeded fails the test unless r is a successful call with text want.
func succeeded(t testing.TB, r *wiretest.Response, want string) {
	t.Helper()
	if r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("call failed: %s", r.Raw)
	}
	got := r.Result["content"].([]any)[0].(map[string]any)["text"]
	if got != want {
		t.Fatalf("call: text %q, want %q", got, want)
	}
}

// rpcErrorData decodes the extension error in a JSON-RPC error's data.
func rpcErrorData(t testing.TB, r *wiretest.Response) (int64, map[string]any) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("want a JSON-RPC error, got %s", r.Raw)
	}
	var data map[string]any
	if err := json.Unmarshal(r.Error.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", r.Error.Data, err)
	}
	return r.Error.Code, data
}
