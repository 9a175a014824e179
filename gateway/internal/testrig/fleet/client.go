package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// Protocol versions.
const (
	Modern = "2026-07-28"
	Legacy = "2025-11-25"
)

// maxResponse bounds a response read.
const maxResponse = 4 << 20

// Client is a raw MCP client of one era over streamable HTTP, safe for one
// goroutine at a time. A legacy client initializes on its first call.
type Client struct {
	URL     string
	Version string
	HTTP    *http.Client
	// Capabilities are the client's capabilities: a legacy client's in
	// initialize, a modern one's in every request's _meta. Nil means
	// form elicitation.
	Capabilities map[string]any
	// OnRequest answers a request the server sends within a call's
	// stream (elicitation/create): its result, or nil to answer with an
	// error. Nil refuses every request.
	OnRequest func(method string, params json.RawMessage) any

	session string
	ready   bool
	id      atomic.Int64
}

// Response is one JSON-RPC response and the replica that sent it.
type Response struct {
	Result  map[string]any `json:"result"`
	Error   *RPCError      `json:"error"`
	Status  int            `json:"-"`
	Replica string         `json:"-"`
	Raw     []byte         `json:"-"`
}

// RPCError is a JSON-RPC error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Call sends method with params and returns the response. A transport
// failure or a reply that is not JSON-RPC is an error.
func (c *Client) Call(ctx context.Context, method string, params map[string]any) (*Response, error) {
	if c.Version == Legacy && !c.ready {
		if err := c.initialize(ctx); err != nil {
			return nil, err
		}
	}
	if params == nil {
		params = map[string]any{}
	}
	if c.Version == Modern {
		p := make(map[string]any, len(params)+1)
		for k, v := range params {
			p[k] = v
		}
		p["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    Modern,
			"io.modelcontextprotocol/clientCapabilities": c.capabilities(),
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "fleet", "version": "0"},
		}
		params = p
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	return c.post(ctx, method, params, body)
}

func (c *Client) initialize(ctx context.Context) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": "initialize", "params": map[string]any{
		"protocolVersion": Legacy, "capabilities": c.capabilities(), "clientInfo": map[string]any{"name": "fleet", "version": "0"},
	}})
	r, err := c.post(ctx, "initialize", nil, body)
	if err != nil {
		return err
	}
	if r.Error != nil || c.session == "" {
		return fmt.Errorf("initialize: %s", r.Raw)
	}
	c.ready = true
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	_, err = c.post(ctx, "", nil, body)
	return err
}

func (c *Client) capabilities() map[string]any {
	if c.Capabilities != nil {
		return c.Capabilities
	}
	return map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
}

// Close ends a legacy session (DELETE); nothing for a modern client.
func (c *Client) Close(ctx context.Context) error {
	if c.session == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", Legacy)
	resp, err := c.client().Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.session, c.ready = "", false
	return nil
}

// Session is the legacy session's id.
func (c *Client) Session() string { return c.session }

func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) post(ctx context.Context, method string, params map[string]any, body []byte) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.Version == Modern || c.ready {
		req.Header.Set("MCP-Protocol-Version", c.Version)
	}
	if c.Version == Modern && method != "" {
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		} else if uri, ok := params["uri"].(string); ok {
			req.Header.Set("Mcp-Name", uri)
		}
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	r := &Response{Status: resp.StatusCode, Replica: resp.Header.Get(ReplicaHeader)}
	raw, err := c.readMessage(ctx, resp)
	if err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if raw == nil {
		if method == "" || resp.StatusCode == http.StatusAccepted {
			return r, nil
		}
		return r, fmt.Errorf("%s: HTTP %d with no JSON-RPC response", method, resp.StatusCode)
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: decoding %q: %w", method, raw, err)
	}
	r.Raw = raw
	return r, nil
}

// readMessage returns the JSON-RPC response of a reply: the body, or the
// first event of a stream that is a response (not a request or a
// notification). A request in the stream is answered with OnRequest.
func (c *Client) readMessage(ctx context.Context, resp *http.Response) ([]byte, error) {
	body := io.LimitReader(resp.Body, maxResponse)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(body)
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, err
		}
		return b, err
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxResponse)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(d, " "))
			continue
		}
		if line != "" || data.Len() == 0 {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(data.Bytes(), &m) == nil && m.ID != nil {
			if m.Method == "" {
				return bytes.Clone(data.Bytes()), nil
			}
			if err := c.answer(ctx, m.ID, m.Method, m.Params); err != nil {
				return nil, err
			}
		}
		data.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("event stream ended without a response")
}

// answer replies to the server's request id.
func (c *Client) answer(ctx context.Context, id json.RawMessage, method string, params json.RawMessage) error {
	reply := map[string]any{"jsonrpc": "2.0", "id": id}
	var result any
	if c.OnRequest != nil {
		result = c.OnRequest(method, params)
	}
	if result != nil {
		reply["result"] = result
	} else {
		reply["error"] = map[string]any{"code": -32601, "message": "not handled by this client"}
	}
	body, err := json.Marshal(reply)
	if err != nil {
		return err
	}
	_, err = c.post(ctx, "", nil, body)
	return err
}

// ioCopy reads a response's body into w, bounded.
func ioCopy(w io.Writer, resp *http.Response) (int64, error) {
	return io.Copy(w, io.LimitReader(resp.Body, maxResponse))
}

// Text is the text of a tool result's first content, "" if none.
func (r *Response) Text() string {
	content, _ := r.Result["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	m, _ := content[0].(map[string]any)
	s, _ := m["text"].(string)
	return s
}
