package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

var discardLogger = slog.New(slog.DiscardHandler)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		// A child process of TestStdioProcessArrays: a stdio server.
		if err := ServeStdio(context.Background(), newTestServer()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Also covers the Example functions, which cannot call VerifyNone.
	goleak.VerifyTestMain(m)
}

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

// newTestServer returns a server with one tool, echo, that reports progress
// when asked to (so that the tests see a notification streamed before the
// result) and returns its input.
func newTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "endpoint-test", Version: "v0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: 1, Total: 1, Message: "echoing",
				}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

// exchange is one HTTP request and its response, as seen on the wire.
type exchange struct {
	method   string
	reqHdr   http.Header
	reqBody  string
	status   int
	respHdr  http.Header
	respBody string
}

// rpcMethod is the JSON-RPC method of the request body, or "".
func (e exchange) rpcMethod() string {
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal([]byte(e.reqBody), &m)
	return m.Method
}

// recorder is HTTP middleware that records every exchange in full. The
// records are complete once the httptest server is closed, since Close waits
// for every handler to return.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []exchange
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	tw := &teeWriter{ResponseWriter: w, status: http.StatusOK}
	rec.next.ServeHTTP(tw, req)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.log = append(rec.log, exchange{
		method:   req.Method,
		reqHdr:   req.Header.Clone(),
		reqBody:  string(body),
		status:   tw.status,
		respHdr:  w.Header().Clone(),
		respBody: tw.buf.String(),
	})
}

func (rec *recorder) exchanges() []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]exchange(nil), rec.log...)
}

// teeWriter copies the response body while still streaming it: Flush and
// Unwrap keep the SDK's event streams working through the recorder.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) {
	t.status = code
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.buf.Write(p)
	return t.ResponseWriter.Write(p)
}

func (t *teeWriter) Flush() { http.NewResponseController(t.ResponseWriter).Flush() }

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// callEcho connects the SDK client to url with sessOpts, lists the tools,
// calls echo (with a progress token if progress is set) and closes the
// session.
func callEcho(t *testing.T, httpClient *http.Client, url string, sessOpts *mcp.ClientSessionOptions, progress bool) (protocolVersion string) {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "endpoint-test-client", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient}, sessOpts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	protocolVersion = cs.InitializeResult().ProtocolVersion

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Fatalf("ListTools = %v, want the echo tool only", tools.Tools)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	if progress {
		params.SetProgressToken("p1")
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello" {
		t.Fatalf("CallTool = %+v (%s), want text hello", res, mustJSON(res.Content))
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return protocolVersion
}

// startRecorded starts an httptest server running NewHandler(newTestServer())
// behind a recorder.
func startRecorded(opts *Options) (*httptest.Server, *recorder) {
	rec := &recorder{next: NewHandler(newTestServer(), opts)}
	return httptest.NewServer(rec), rec
}

// TestSDKClientModern connects the SDK client in its default mode and checks
// on the wire that it spoke 2026-07-28 through the stateless handler.
func TestSDKClientModern(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts, rec := startRecorded(nil)
	defer ts.Close()
	got := callEcho(t, ts.Client(), ts.URL, nil, true)
	ts.Close()

	if got != "2026-07-28" {
		t.Errorf("negotiated protocol version = %q, want 2026-07-28", got)
	}
	ex := rec.exchanges()
	methods := []string{}
	for _, e := range ex {
		methods = append(methods, e.method+" "+e.rpcMethod())
		if e.method != http.MethodPost {
			t.Errorf("unexpected %s request in the 2026-07-28 era", e.method)
		}
		// The SDK client sends the version header on every request, the
		// first (server/discover) included.
		if v := e.reqHdr.Get("MCP-Protocol-Version"); v != "2026-07-28" {
			t.Errorf("%s: MCP-Protocol-Version = %q, want 2026-07-28", e.rpcMethod(), v)
		}
		if m := e.reqHdr.Get("Mcp-Method"); m != e.rpcMethod() {
			t.Errorf("%s: Mcp-Method = %q, want the JSON-RPC method", e.rpcMethod(), m)
		}
		if id := e.respHdr.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("%s: response has Mcp-Session-Id %q; the stateless era has none", e.rpcMethod(), id)
		}
		if e.status != http.StatusOK {
			t.Errorf("%s: status %d, want 200", e.rpcMethod(), e.status)
		}
		if e.rpcMethod() == "initialize" {
			t.Errorf("the 2026-07-28 client sent initialize")
		}
	}
	// Exchanges are logged as their handlers return, which need not be the
	// order of the requests: compare them sorted.
	slices.Sort(methods)
	want := []string{"POST server/discover", "POST tools/call", "POST tools/list"}
	if !slices.Equal(methods, want) {
		t.Fatalf("requests = %q, want %q", methods, want)
	}
	for _, e := range ex {
		res := resultOf(t, e)
		if string(res["resultType"]) != `"complete"` {
			t.Errorf("%s: resultType = %s, want \"complete\"", e.rpcMethod(), res["resultType"])
		}
		if e.rpcMethod() == "tools/call" && !strings.Contains(e.respBody, `"notifications/progress"`) {
			t.Errorf("tools/call response stream lacks the progress notification:\n%s", e.respBody)
		}
	}
}

// TestSDKClientLegacy pins the SDK client to 2025-11-25 and checks on the
// wire that it used the initialize handshake and a session.
func TestSDKClientLegacy(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts, rec := startRecorded(nil)
	defer ts.Close()
	got := callEcho(t, ts.Client(), ts.URL, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, true)
	ts.Close()

	if got != "2025-11-25" {
		t.Errorf("negotiated protocol version = %q, want 2025-11-25", got)
	}
	// Exchanges are logged as their handlers return, not in request order:
	// find the session id first.
	ex := rec.exchanges()
	var sessionID string
	for _, e := range ex {
		if e.rpcMethod() == "initialize" {
			sessionID = e.respHdr.Get("Mcp-Session-Id")
		}
	}
	seen := map[string]bool{}
	for _, e := range ex {
		key := e.method + " " + e.rpcMethod()
		seen[key] = true
		switch key {
		case "POST initialize":
			// The SDK client's initialize carries no version header: this is
			// the request whose body the router peeks at.
			if v := e.reqHdr.Get("MCP-Protocol-Version"); v != "" {
				t.Errorf("initialize: MCP-Protocol-Version = %q, want none", v)
			}
			if sessionID == "" {
				t.Errorf("initialize: no Mcp-Session-Id in the response")
			}
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if err := json.Unmarshal(resultOf(t, e)["protocolVersion"], &init.ProtocolVersion); err != nil || init.ProtocolVersion != "2025-11-25" {
				t.Errorf("initialize result protocolVersion = %q (%v), want 2025-11-25", init.ProtocolVersion, err)
			}
		default:
			if v := e.reqHdr.Get("MCP-Protocol-Version"); v != "2025-11-25" {
				t.Errorf("%s: MCP-Protocol-Version = %q, want 2025-11-25", key, v)
			}
			if id := e.reqHdr.Get("Mcp-Session-Id"); id == "" || id != sessionID {
				t.Errorf("%s: Mcp-Session-Id = %q, want %q", key, id, sessionID)
			}
		}
		if e.method == http.MethodPost && e.rpcMethod() == "tools/list" {
			if _, ok := resultOf(t, e)["resultType"]; ok {
				t.Errorf("tools/list: legacy result carries resultType")
			}
		}
		if key == "POST tools/call" && !strings.Contains(e.respBody, `"notifications/progress"`) {
			t.Errorf("tools/call response stream lacks the progress notification:\n%s", e.respBody)
		}
	}
	for _, k := range []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/call", "DELETE "} {
		if !seen[k] {
			t.Errorf("no %q request on the wire; saw %v", k, seen)
		}
	}
	if seen["POST server/discover"] {
		t.Errorf("the pinned legacy client sent server/discover")
	}
}

// TestSDKClientJSONResponse runs both eras with JSONResponse set, which the
// router passes to both SDK handlers. No progress is asked for: a JSON
// response cannot carry a notification, and in the 2026-07-28 era (no
// standalone stream to fall back on) the SDK fails NotifyProgress with
// "undelivered message: stream not connected or already closed".
func TestSDKClientJSONResponse(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts, rec := startRecorded(&Options{JSONResponse: true})
	defer ts.Close()
	callEcho(t, ts.Client(), ts.URL, nil, false)
	callEcho(t, ts.Client(), ts.URL, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, false)
	ts.Close()
	for _, e := range rec.exchanges() {
		if e.method == http.MethodPost && e.status == http.StatusOK {
			if ct := e.respHdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s: Content-Type = %q, want application/json", e.rpcMethod(), ct)
			}
		}
	}
}

// rpcResponse is a JSON-RPC response, kept raw.
type rpcResponse struct {
	ID     json.RawMessage            `json:"id"`
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// responseOf decodes the JSON-RPC response in an HTTP response body, which
// is either application/json or an event stream whose last data line holds
// the response (earlier events are notifications).
func responseOf(t *testing.T, contentType, body string) rpcResponse {
	t.Helper()
	payload := body
	if strings.HasPrefix(contentType, "text/event-stream") {
		payload = ""
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var probe struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal([]byte(data), &probe) == nil && probe.ID != nil {
					payload = data
				}
			}
		}
	}
	var r rpcResponse
	if err := json.Unmarshal([]byte(payload), &r); err != nil {
		t.Fatalf("cannot decode a JSON-RPC response (Content-Type %q): %v\n%s", contentType, err, body)
	}
	return r
}

// resultOf is the result of the JSON-RPC response in e; it fails on an error.
func resultOf(t *testing.T, e exchange) map[string]json.RawMessage {
	t.Helper()
	r := responseOf(t, e.respHdr.Get("Content-Type"), e.respBody)
	if r.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", e.rpcMethod(), r.Error.Code, r.Error.Message)
	}
	return r.Result
}

// post sends one raw JSON-RPC message and returns the HTTP response with its
// body read.
func post(t *testing.T, c *http.Client, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestRawModernToolsList sends a 2026-07-28 tools/list by hand.
func TestRawModernToolsList(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := httptest.NewServer(NewHandler(newTestServer(), nil))
	defer ts.Close()

	resp, body := post(t, ts.Client(), ts.URL, map[string]string{
		"MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method":           "tools/list",
	}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("Mcp-Session-Id = %q, want none", id)
	}
	r := responseOf(t, resp.Header.Get("Content-Type"), body)
	if r.Error != nil {
		t.Fatalf("JSON-RPC error %+v", r.Error)
	}
	if got := string(r.Result["resultType"]); got != `"complete"` {
		t.Errorf("resultType = %s, want \"complete\"", got)
	}
	if !strings.Contains(string(r.Result["tools"]), `"name":"echo"`) {
		t.Errorf("tools = %s, want echo", r.Result["tools"])
	}

	// A tools/call needs Mcp-Name as well.
	resp, body = post(t, ts.Client(), ts.URL, map[string]string{
		"MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "echo",
	}, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"raw"},`+modernMeta+`}}`)
	r = responseOf(t, resp.Header.Get("Content-Type"), body)
	if r.Error != nil || string(r.Result["resultType"]) != `"complete"` || !strings.Contains(string(r.Result["content"]), `"raw"`) {
		t.Errorf("tools/call: status %d, body %s", resp.StatusCode, body)
	}
}

// TestRawModernWithoutHeader sends a 2026-07-28 request whose body carries
// the version in _meta but lacks the header: the router sends it to the
// stateless handler, which answers -32020 (header required), not the
// stateful handler's -32022 (unsupported version).
func TestRawModernWithoutHeader(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := httptest.NewServer(NewHandler(newTestServer(), nil))
	defer ts.Close()

	resp, body := post(t, ts.Client(), ts.URL, map[string]string{"Mcp-Method": "tools/list"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	r := responseOf(t, resp.Header.Get("Content-Type"), body)
	if r.Error == nil || r.Error.Code != mcp.CodeHeaderMismatch {
		t.Errorf("response %s, want JSON-RPC error %d", body, mcp.CodeHeaderMismatch)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("Mcp-Session-Id = %q, want none", id)
	}
}

// TestRawLegacy drives the 2025-11-25 handshake by hand, and checks that a
// legacy request without initialize is refused.
func TestRawLegacy(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := httptest.NewServer(NewHandler(newTestServer(), nil))
	defer ts.Close()
	c := ts.Client()

	t.Run("without initialize", func(t *testing.T) {
		for _, hdr := range []map[string]string{
			{"MCP-Protocol-Version": "2025-11-25"},
			{}, // no header at all: peeked at, then legacy
		} {
			// The SDK answers 200 with a JSON-RPC error (code 0) from a
			// session it creates for the request and then closes.
			resp, body := post(t, c, ts.URL, hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
			r := responseOf(t, resp.Header.Get("Content-Type"), body)
			if r.Error == nil || !strings.Contains(r.Error.Message, "invalid during session initialization") {
				t.Errorf("headers %v: tools/list without initialize: status %d, body %s; want an error", hdr, resp.StatusCode, body)
			}
		}
		resp, body := post(t, c, ts.URL, map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "no-such-session"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("unknown session: status %d, want 404: %s", resp.StatusCode, body)
		}
	})

	t.Run("session", func(t *testing.T) {
		resp, body := post(t, c, ts.URL, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: status %d: %s", resp.StatusCode, body)
		}
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: no Mcp-Session-Id")
		}
		r := responseOf(t, resp.Header.Get("Content-Type"), body)
		if r.Error != nil || string(r.Result["protocolVersion"]) != `"2025-11-25"` {
			t.Fatalf("initialize: %s", body)
		}
		if _, ok := r.Result["resultType"]; ok {
			t.Errorf("initialize result carries resultType")
		}
		hdr := map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}

		resp, body = post(t, c, ts.URL, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("initialized: status %d: %s", resp.StatusCode, body)
		}
		resp, body = post(t, c, ts.URL, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
		r = responseOf(t, resp.Header.Get("Content-Type"), body)
		if r.Error != nil || !strings.Contains(string(r.Result["tools"]), `"name":"echo"`) {
			t.Fatalf("tools/list: %s", body)
		}
		if _, ok := r.Result["resultType"]; ok {
			t.Errorf("legacy tools/list result carries resultType")
		}
		resp, body = post(t, c, ts.URL, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy"}}}`)
		r = responseOf(t, resp.Header.Get("Content-Type"), body)
		if r.Error != nil || !strings.Contains(string(r.Result["content"]), `"legacy"`) {
			t.Fatalf("tools/call: %s", body)
		}

		req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		dresp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dresp.Body.Close()
		if dresp.StatusCode != http.StatusNoContent {
			t.Errorf("DELETE: status %d, want 204", dresp.StatusCode)
		}
	})
}

// TestRoute checks the routing rules alone, with fake handlers that report
// which one answered and what body they received.
func TestRoute(t *testing.T) {
	fake := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				io.WriteString(w, name+" read error: "+err.Error())
				return
			}
			io.WriteString(w, name+" "+string(b))
		})
	}
	const limit = 256
	rt := &Handler{stateful: fake("stateful"), stateless: fake("stateless"), peekLimit: limit, logger: discardLogger}

	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	future := strings.Replace(modern, "2026-07-28", "2030-01-01", 1)
	legacyInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", limit) + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	tests := []struct {
		name    string
		method  string
		hdr     map[string]string
		body    string
		want    string
		readErr bool
	}{
		{"modern header", "POST", map[string]string{"MCP-Protocol-Version": "2026-07-28"}, modern, "stateless", false},
		{"lower-case header name", "POST", map[string]string{"mcp-protocol-version": "2026-07-28"}, legacyInit, "stateless", false},
		{"future header", "POST", map[string]string{"MCP-Protocol-Version": "2030-01-01"}, modern, "stateless", false},
		{"legacy header", "POST", map[string]string{"MCP-Protocol-Version": "2025-11-25"}, modern, "stateful", false},
		{"old header", "POST", map[string]string{"MCP-Protocol-Version": "2024-11-05"}, legacyInit, "stateful", false},
		{"malformed header sorting after", "POST", map[string]string{"MCP-Protocol-Version": "9999"}, modern, "stateful", false},
		{"malformed header with date prefix", "POST", map[string]string{"MCP-Protocol-Version": "2026-07-28x"}, modern, "stateful", false},
		{"no header, legacy initialize", "POST", nil, legacyInit, "stateful", false},
		{"no header, modern body", "POST", nil, modern, "stateless", false},
		{"no header, future body", "POST", nil, future, "stateless", false},
		{"no header, legacy version in body", "POST", nil, strings.Replace(modern, "2026-07-28", "2025-11-25", 1), "stateful", false},
		{"no header, malformed body version", "POST", nil, strings.Replace(modern, "2026-07-28", "latest", 1), "stateful", false},
		{"no header, non-string body version", "POST", nil, strings.Replace(modern, `"2026-07-28"`, "20260728", 1), "stateful", false},
		{"no header, key in other case", "POST", nil, strings.Replace(modern, "io.modelcontextprotocol/protocolVersion", "IO.modelcontextprotocol/protocolversion", 1), "stateful", false},
		{"no header, not JSON", "POST", nil, "{", "stateful", false},
		{"no header, empty body", "POST", nil, "", "stateful", false},
		{"no header, body over limit", "POST", nil, big, "stateful", false},
		{"no header, session id, modern body", "POST", map[string]string{"Mcp-Session-Id": "s1"}, modern, "stateful", false},
		{"no header, read error", "POST", nil, modern[:20], "stateful", true},
		{"GET with session", "GET", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s1"}, "", "stateful", false},
		{"GET without header", "GET", nil, "", "stateful", false},
		{"GET modern header", "GET", map[string]string{"MCP-Protocol-Version": "2026-07-28"}, "", "stateless", false},
		{"DELETE with session", "DELETE", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s1"}, "", "stateful", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.readErr {
				body = io.MultiReader(body, errReader{errors.New("connection reset")})
			}
			req := httptest.NewRequest(tt.method, "/mcp", body)
			for k, v := range tt.hdr {
				req.Header.Set(k, v) // as net/http does with incoming names
			}
			w := httptest.NewRecorder()
			rt.ServeHTTP(w, req)
			want := tt.want + " " + tt.body
			if tt.readErr {
				want = tt.want + " read error: connection reset"
			}
			if got := w.Body.String(); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestIsVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"2026-07-28": true, "2025-11-25": true, "0000-00-00": true,
		"": false, "2026-7-28": false, "2026/07/28": false, "2026-07-28 ": false, "v2026-07-2": false, "２026-07-28": false,
	} {
		if got := isVersion(v); got != want {
			t.Errorf("isVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
