// Package wiretest sends raw JSON-RPC over streamable HTTP, in both
// protocol eras, for tests that check what is on the wire: exact result
// fields, error codes and messages, as a third-party peer would see them.
package wiretest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Response is one JSON-RPC response.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *Error          `json:"error"`
	// Raw is the response as received.
	Raw json.RawMessage `json:"-"`
	// Before are the messages (notifications, requests) of an event
	// stream that came before the response, as received.
	Before []json.RawMessage `json:"-"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Peer talks to one MCP endpoint as a raw client.
type Peer struct {
	URL string
	// Version is the protocol version: "2026-07-28" sends per-request
	// _meta and the MCP-Protocol-Version header; anything older runs the
	// initialize handshake on first use and sends the session id.
	Version string
	// Capabilities are the client capabilities declared (per request, or
	// in initialize).
	Capabilities map[string]any
	// Header is sent with every request (an Authorization, say).
	Header http.Header

	session string
	nextID  atomic.Int64
	ready   bool
}

// Stateless returns a peer for 2026-07-28 with the given capabilities.
func Stateless(url string, caps map[string]any) *Peer {
	return &Peer{URL: url, Version: "2026-07-28", Capabilities: caps}
}

// Legacy returns a peer for 2025-11-25 with the given capabilities.
func Legacy(url string, caps map[string]any) *Peer {
	return &Peer{URL: url, Version: "2025-11-25", Capabilities: caps}
}

// WithExtension returns capabilities declaring the given extensions, each
// with empty settings.
func WithExtension(ids ...string) map[string]any {
	ext := map[string]any{}
	for _, id := range ids {
		ext[id] = map[string]any{}
	}
	return map[string]any{"extensions": ext}
}

func (p *Peer) stateless() bool { return p.Version >= "2026-07-28" }

// Call sends method with params (nil for none) and returns the response.
// Under 2026-07-28 the per-request _meta is merged into params.
func (p *Peer) Call(t testing.TB, method string, params map[string]any) *Response {
	t.Helper()
	if !p.stateless() && !p.ready && method != "initialize" {
		p.Initialize(t)
	}
	params = maps.Clone(params) // never modify the caller's map
	if params == nil {
		params = map[string]any{}
	}
	if p.stateless() {
		meta, _ := params["_meta"].(map[string]any)
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = p.Version
		meta["io.modelcontextprotocol/clientCapabilities"] = orEmpty(p.Capabilities)
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "wiretest", "version": "0"}
		params["_meta"] = meta
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.nextID.Add(1), "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return p.Post(t, body)
}

// Post sends a raw body and returns the one response in it. A reply with
// no JSON-RPC response fails the test.
func (p *Peer) Post(t testing.TB, body []byte) *Response {
	t.Helper()
	status, resp := p.PostRaw(t, body)
	if resp == nil {
		t.Fatalf("POST %s: HTTP %d with no JSON-RPC response", p.URL, status)
	}
	return resp
}

// PostRaw sends a raw body and returns the HTTP status and the JSON-RPC
// response, if the reply held one.
func (p *Peer) PostRaw(t testing.TB, body []byte) (int, *Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, p.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if p.stateless() || p.ready {
		req.Header.Set("MCP-Protocol-Version", p.Version)
	}
	if p.stateless() {
		setRoutingHeaders(req.Header, body)
	}
	if p.session != "" {
		req.Header.Set("Mcp-Session-Id", p.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", p.URL, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		p.session = id
	}
	raw, before, err := readMessage(resp)
	if err != nil {
		t.Fatalf("POST %s: reading reply: %v", p.URL, err)
	}
	if raw == nil {
		return resp.StatusCode, nil
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("POST %s: decoding %s: %v", p.URL, raw, err)
	}
	r.Raw, r.Before = raw, before
	return resp.StatusCode, &r
}

// setRoutingHeaders sets the Mcp-Method and Mcp-Name headers that
// 2026-07-28 requires to mirror the body.
func setRoutingHeaders(h http.Header, body []byte) {
	var msg struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return
	}
	h.Set("Mcp-Method", msg.Method)
	var params struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	json.Unmarshal(msg.Params, &params) // params that do not fit name nothing
	switch msg.Method {
	case "tools/call", "prompts/get":
		h.Set("Mcp-Name", params.Name)
	case "resources/read":
		h.Set("Mcp-Name", params.URI)
	}
}

// Session returns the legacy session id, "" if none.
func (p *Peer) Session() string { return p.session }

// Initialize runs the legacy handshake and returns the initialize result.
func (p *Peer) Initialize(t testing.TB) *Response {
	t.Helper()
	r := p.Call(t, "initialize", map[string]any{
		"protocolVersion": p.Version,
		"capabilities":    orEmpty(p.Capabilities),
		"clientInfo":      map[string]any{"name": "wiretest", "version": "0"},
	})
	if r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	p.ready = true
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	p.PostRaw(t, body)
	return r
}

// Close ends a legacy session.
func (p *Peer) Close() {
	if p.session == "" {
		return
	}
	req, _ := http.NewRequest(http.MethodDelete, p.URL, nil)
	maps.Copy(req.Header, p.Header)
	req.Header.Set("Mcp-Session-Id", p.session)
	req.Header.Set("MCP-Protocol-Version", p.Version)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	p.session = ""
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// readMessage returns the first JSON-RPC response in a JSON or
// event-stream reply, nil if there is none.
func readMessage(resp *http.Response) (json.RawMessage, []json.RawMessage, error) {
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		var before []json.RawMessage
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				data = strings.TrimSpace(data)
				var probe struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal([]byte(data), &probe) == nil && probe.Method == "" && probe.ID != nil {
					return json.RawMessage(data), before, nil
				}
				before = append(before, json.RawMessage(data))
			}
		}
		return nil, before, sc.Err()
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, nil, nil
	}
	return b, nil, nil
}

// MustJSON returns v as indented JSON, for failure messages.
func MustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
