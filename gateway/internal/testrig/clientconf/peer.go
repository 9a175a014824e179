package clientconf

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
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// peer is the gateway as the scenario's client sees it, in one era.
type peer interface {
	// request sends one request and returns its result, or an error for a
	// JSON-RPC error.
	request(ctx context.Context, method string, params map[string]any) (map[string]any, error)
	close() error
}

// Stateless is the protocol revision without initialize and sessions.
const Stateless = "2026-07-28"

// connect opens a peer at url in the era of protocol: Stateless sends each
// request on its own with _meta; any other revision initializes a session
// with the Go SDK's client.
func connect(ctx context.Context, url, protocol string) (peer, error) {
	if protocol == Stateless {
		return &stateless{url: url, protocol: protocol}, nil
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "preflight-conformance-client", Version: "1"}, &mcp.ClientOptions{
		// Accept with nothing filled in: the SDK applies the schema's
		// defaults to an accepted form.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return nil, err
	}
	return &session{s: s}, nil
}

// session is a 2025-11-25 peer: the SDK's client session.
type session struct{ s *mcp.ClientSession }

func (p *session) request(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	var (
		res any
		err error
	)
	switch method {
	case "tools/list":
		res, err = p.s.ListTools(ctx, nil)
	case "tools/call":
		args, _ := params["arguments"].(map[string]any)
		res, err = p.s.CallTool(ctx, &mcp.CallToolParams{Name: params["name"].(string), Arguments: args})
	case "resources/list":
		res, err = p.s.ListResources(ctx, nil)
	case "resources/read":
		res, err = p.s.ReadResource(ctx, &mcp.ReadResourceParams{URI: params["uri"].(string)})
	case "prompts/list":
		res, err = p.s.ListPrompts(ctx, nil)
	case "prompts/get":
		res, err = p.s.GetPrompt(ctx, &mcp.GetPromptParams{Name: params["name"].(string)})
	default:
		return nil, fmt.Errorf("%s is not sent on a session here", method)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return asMap(res)
}

func (p *session) close() error { return p.s.Close() }

// stateless is a 2026-07-28 peer: every request a POST of its own whose
// _meta carries the revision, the client's name and its capabilities, as
// the suite's reference client sends them, with the standard Mcp-Method
// and Mcp-Name headers the gateway requires.
type stateless struct {
	url, protocol string
	id            atomic.Int64
	tools         sync.Map // name -> *mcp.Tool, as last listed: the Mcp-Param headers of calls
}

func (p *stateless) request(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	if params == nil {
		params = map[string]any{}
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion": p.protocol,
		"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "preflight-conformance-client", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"roots": map[string]any{}, "sampling": map[string]any{}, "elicitation": map[string]any{},
		},
	}
	if m, ok := params["_meta"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	params["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", p.protocol)
	req.Header.Set("Mcp-Method", method)
	for _, key := range []string{"name", "uri"} { // tools/call, prompts/get; resources/read
		if v, ok := params[key].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	if method == "tools/call" {
		if err := p.paramHeaders(req.Header, params); err != nil {
			return nil, err
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	msg, err := readResponse(resp)
	if err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	var r struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	if method == "tools/list" {
		if err := p.remember(r.Result); err != nil {
			return nil, err
		}
	}
	return r.Result, nil
}

// remember keeps the tools of a tools/list result.
func (p *stateless) remember(res map[string]any) error {
	var list mcp.ListToolsResult
	b, err := json.Marshal(res)
	if err == nil {
		err = json.Unmarshal(b, &list)
	}
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range list.Tools {
		p.tools.Store(t.Name, t)
	}
	return nil
}

// paramHeaders adds the Mcp-Param headers of a tools/call (SEP-2243),
// encoded as the gateway encodes its own to upstreams.
func (p *stateless) paramHeaders(h http.Header, params map[string]any) error {
	name, _ := params["name"].(string)
	t, ok := p.tools.Load(name)
	if !ok {
		return nil
	}
	args, err := json.Marshal(params["arguments"])
	if err != nil {
		return err
	}
	for k, v := range wire.ParamHeaders(t.(*mcp.Tool), args) {
		h[k] = v
	}
	return nil
}

func (p *stateless) close() error { return nil }

// maxResponse bounds one response.
const maxResponse = 8 << 20

// readResponse returns the JSON-RPC response in resp's body: the body
// itself, or the last message of an event stream.
func readResponse(resp *http.Response) ([]byte, error) {
	body := io.LimitReader(resp.Body, maxResponse)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return io.ReadAll(body)
	}
	var last []byte
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, maxResponse)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(data) != "" {
			last = []byte(data)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if last == nil {
		return nil, errors.New("an event stream without a message")
	}
	return last, nil
}

// asMap is v as JSON, decoded into a map.
func asMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
