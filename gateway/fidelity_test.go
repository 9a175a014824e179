package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// rawTool is how the upstream of TestFidelity lists its tool: annotations
// with explicit false values, a field the SDK's types do not know, a
// number the SDK would round through float64, and keys in an order the SDK
// would not write.
const rawTool = `{"name":"probe","title":"Probe","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615}}},` +
	`"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false,"title":"Probe"},` +
	`"execution":{"taskSupport":"optional"},"x-vendor":{"big":12345678901234567890,"nested":[false,null]}}`

// rawResult is its call result: structured content with a big integer and
// a content block field the SDK does not know.
const rawResult = `{"content":[{"type":"text","text":"ok","x-extra":true}],"structuredContent":{"id":12345678901234567890,"ratio":1.50},"isError":false,"_meta":{"vendor/trace":"abc"}}`

type rawToolsPage struct {
	*mcp.ListToolsResult
	Tools []json.RawMessage `json:"tools"`
}

// rawUpstream is a server that lists rawTool and answers rawResult as they
// are, recording the standard headers of the calls it gets.
func rawUpstream(t *testing.T, names ...string) (url string, headers func() []http.Header) {
	url, headers, _ = rawUpstreamBodies(t, names...)
	return url, headers
}

// rawUpstreamBodies is rawUpstream that also records the bodies of the
// tools/call requests it gets.
func rawUpstreamBodies(t *testing.T, names ...string) (url string, headers func() []http.Header, bodies func() []string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	for _, n := range names {
		s.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, nil
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				var tools []json.RawMessage
				for _, n := range names {
					q, _ := json.Marshal(n)
					tl, _ := rawjson.Set([]byte(rawTool), "name", q)
					tools = append(tools, tl)
				}
				return &rawToolsPage{ListToolsResult: &mcp.ListToolsResult{Cacheable: mcp.Cacheable{TTLMs: 60000, CacheScope: "public"}}, Tools: tools}, nil
			case "tools/call":
				return call.NewRaw(json.RawMessage(rawResult)), nil
			}
			return next(ctx, method, req)
		}
	})
	var mu sync.Mutex
	var seen []http.Header
	var got []string
	h := endpoint.NewHandler(s, nil)
	url = serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			got = append(got, string(b))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	return url, func() []http.Header {
			mu.Lock()
			defer mu.Unlock()
			return seen
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return got
		}
}

// TestFidelity checks that what an upstream lists and answers reaches
// clients byte for byte (explicit false annotations stay false, unknown
// fields and big numbers survive), only the name changing when prefixed,
// in both eras.
func TestFidelity(t *testing.T) {
	t.Parallel()
	upURL, _ := rawUpstream(t, "probe")
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "raw", URL: upURL}}})
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		r := p.Call(t, "tools/list", nil)
		tools, _, _ := rawjson.Get(r.Raw, "result")
		arr, _, _ := rawjson.Get(tools, "tools")
		els, err := rawjson.Elements(arr)
		if err != nil || len(els) != 1 {
			t.Fatalf("%s tools/list: %s", p.Version, r.Raw)
		}
		// The gateway adds the seed's "resolve": true; everything else is
		// the upstream's, byte for byte.
		got, _ := rawjson.Delete(els[0], "resolve")
		want, _ := rawjson.Delete([]byte(rawTool)) // Members/Object normalise spacing only
		if !bytes.Equal(got, want) {
			t.Errorf("%s tool:\n got %s\nwant %s", p.Version, got, want)
		}
		if v, _, _ := rawjson.Get(els[0], "resolve"); string(v) != "true" {
			t.Errorf("%s tool lacks resolve: true: %s", p.Version, els[0])
		}

		r = p.Call(t, "tools/call", map[string]any{"name": "probe", "arguments": map[string]any{"n": 1}})
		res, _, _ := rawjson.Get(r.Raw, "result")
		for _, want := range []string{`"id":12345678901234567890`, `"ratio":1.50`, `"x-extra":true`, `"vendor/trace":"abc"`, `"isError":false`} {
			if !strings.Contains(string(res), want) {
				t.Errorf("%s result lacks %s: %s", p.Version, want, res)
			}
		}
		_, hasType, _ := rawjson.Get(res, "resultType")
		if hasType != (p.Version == modern) {
			t.Errorf("%s result resultType present = %v: %s", p.Version, hasType, res)
		}
		p.Close()
	}
}

// TestPrefixedHeaders checks the standard headers of a prefixed call: the
// gateway validates the client's Mcp-Name against the body (a mismatch is
// refused with -32020) and sends the upstream its own name in both.
func TestPrefixedHeaders(t *testing.T) {
	t.Parallel()
	upURL, seen := rawUpstream(t, "probe")
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "raw", URL: upURL},
		{Name: "files", URL: filesServer(t)},
	}})
	p := wiretest.Stateless(url, nil)
	r := p.Call(t, "tools/call", map[string]any{"name": "raw__probe", "arguments": map[string]any{}})
	if r.Error != nil {
		t.Fatalf("call: %s", r.Raw)
	}
	hs := seen()
	if len(hs) != 1 || hs[0].Get("Mcp-Name") != "probe" {
		t.Fatalf("upstream saw Mcp-Name %v, want probe", hs)
	}
	if !strings.Contains(string(r.Raw), `"id":12345678901234567890`) {
		t.Errorf("result: %s", r.Raw)
	}

	// A client whose Mcp-Name does not match its body.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"raw__probe","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modern)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "probe")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Error *wiretest.Error `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || msg.Error == nil || msg.Error.Code != -32020 {
		t.Errorf("mismatched Mcp-Name: HTTP %d, %+v", resp.StatusCode, msg.Error)
	}
	if len(seen()) != 1 {
		t.Errorf("the refused call reached the upstream")
	}
}

// TestListCache checks ttlMs and cacheScope of aggregated lists: the
// smallest non-zero time to live, private when any upstream's list may not
// be cached.
func TestListCache(t *testing.T) {
	t.Parallel()
	upURL, _ := rawUpstream(t, "probe") // tools: 60 s, public
	one, url1 := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "raw", URL: upURL}}})
	_ = one
	p := wiretest.Stateless(url1, nil)
	r := p.Call(t, "tools/list", nil)
	if r.Result["ttlMs"] != float64(60000) || r.Result["cacheScope"] != "public" {
		t.Errorf("one public upstream: ttlMs %v, cacheScope %v", r.Result["ttlMs"], r.Result["cacheScope"])
	}
	// With the files example, whose SDK server says ttlMs 0 (public).
	_, url2 := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "raw", URL: upURL}, {Name: "files", URL: filesServer(t)}}})
	p = wiretest.Stateless(url2, nil)
	r = p.Call(t, "tools/list", nil)
	if r.Result["ttlMs"] != float64(60000) || r.Result["cacheScope"] != "private" {
		t.Errorf("with an uncacheable upstream: ttlMs %v, cacheScope %v", r.Result["ttlMs"], r.Result["cacheScope"])
	}
}

// TestPassthrough checks the path of a 2026-07-28 client's tools/call to a
// 2026-07-28 HTTP upstream: the request reaches the upstream re-encoded
// from what the gateway judged (its name, arguments byte for byte and
// _meta; a member it does not judge is not forwarded), renamed in body and
// header, and the upstream's refusals reach the client (HTTP status and
// JSON-RPC error).
func TestPassthrough(t *testing.T) {
	t.Parallel()
	upURL, headers, bodies := rawUpstreamBodies(t, "probe")
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "raw", URL: upURL},
		{Name: "files", URL: filesServer(t)},
	}})
	p := wiretest.Stateless(url, map[string]any{"elicitation": map[string]any{}})
	r := p.Call(t, "tools/call", map[string]any{"name": "raw__probe", "arguments": map[string]any{"n": json.Number("12345678901234567890")}, "x-vendor": map[string]any{"kept": true}})
	if r.Error != nil || !strings.Contains(string(r.Raw), `"id":12345678901234567890`) {
		t.Fatalf("call: %s", r.Raw)
	}
	b := bodies()
	if len(b) != 1 || strings.Contains(b[0], `x-vendor`) || !strings.Contains(b[0], `"name":"probe"`) ||
		!strings.Contains(b[0], `"elicitation":{}`) || !strings.Contains(b[0], `12345678901234567890`) {
		t.Errorf("the upstream got %q", b)
	}
	if h := headers()[0]; h.Get("Mcp-Name") != "probe" || h.Get("Mcp-Protocol-Version") != modern || h.Get("Authorization") != "" {
		t.Errorf("upstream headers: %v", h)
	}

	// A request without the per-request _meta: refused, as the SDK's
	// server refuses it, before it reaches the upstream.
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"raw__probe","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "raw__probe", "Authorization": "Bearer client-token"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		ID    int             `json:"id"`
		Error *wiretest.Error `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || msg.Error == nil || msg.Error.Code != -32602 || msg.ID != 3 {
		t.Errorf("missing _meta: HTTP %d, %+v", resp.StatusCode, msg)
	}
	if hs := headers(); len(hs) != 1 {
		t.Errorf("a request without _meta reached the upstream: %v", hs)
	}
}

// TestEmptyLists: with nothing to list, every list is an empty array,
// never null, in both eras (TypeScript clients refuse null), and an
// upstream that lists nothing as null (as gateways of before did) is read
// as listing nothing, its tools still served.
func TestEmptyLists(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "nulls", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "only", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "prompts/list":
				return &promptsNull{ListPromptsResult: &mcp.ListPromptsResult{}}, nil
			case "resources/list":
				return &resourcesNull{ListResourcesResult: &mcp.ListResourcesResult{}}, nil
			}
			return next(ctx, method, req)
		}
	})
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "nulls", URL: serveHTTP(t, endpoint.NewHandler(s, nil))}}})
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		for method, field := range map[string]string{"prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"} {
			r := p.Call(t, method, nil)
			if r.Error != nil || !strings.Contains(string(r.Raw), `"`+field+`":[]`) {
				t.Errorf("%s %s: %s", p.Version, method, r.Raw)
			}
		}
		if r := p.Call(t, "tools/list", nil); r.Error != nil || !strings.Contains(string(r.Raw), `"name":"only"`) {
			t.Errorf("%s tools/list of an upstream that lists nothing as null: %s", p.Version, r.Raw)
		}
		p.Close()
	}
}

// promptsNull and resourcesNull list nothing as null.
type (
	promptsNull struct {
		*mcp.ListPromptsResult
		Prompts []json.RawMessage `json:"prompts"`
	}
	resourcesNull struct {
		*mcp.ListResourcesResult
		Resources []json.RawMessage `json:"resources"`
	}
)
