package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
)

// holder is a server whose tool "hold" answers "held to the end" once
// release is closed, or fails when its call is cancelled; started gets
// one value per call.
func holder(started chan<- struct{}, release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "holder", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held to the end"}}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	return s
}

// rawAs sends a legacy request of session as the holder of token and
// returns its HTTP status and body.
func rawAs(t *testing.T, method, url, token, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacy)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestSessionIsItsOpeners: bob, who knows alice's legacy session id,
// cannot cancel her call in flight (notifications/cancelled for any
// request id), end her session (DELETE) or call in it: each is answered
// 404, as for an unknown session, and her call completes.
func TestSessionIsItsOpeners(t *testing.T) {
	t.Parallel()
	a, tokens := staticTokens(t, "alice", "bob")
	started, release := make(chan struct{}, 1), make(chan struct{})
	_, url := startGateway(t, &gateway.Options{Auth: a, Upstreams: []gateway.UpstreamSpec{{Name: "up", Connect: inMemory(holder(started, release))}}})
	alice := connectAs(t, url, legacy, tokens["alice"])
	session := alice.ID()

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan result, 1)
	go func() {
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{}})
		called <- result{res, err}
	}()
	<-started

	bob := tokens["bob"]
	for id := range 10 {
		cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(rune('0'+id)) + `}}`
		if status, body := rawAs(t, http.MethodPost, url, bob, session, cancel); status != http.StatusNotFound {
			t.Errorf("bob cancels request %d of alice's session: HTTP %d %s, want 404", id, status, body)
		}
	}
	if status, body := rawAs(t, http.MethodPost, url, bob, session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("bob lists tools in alice's session: HTTP %d %s, want 404", status, body)
	}
	if status, body := rawAs(t, http.MethodDelete, url, bob, session, ""); status != http.StatusNotFound {
		t.Errorf("bob deletes alice's session: HTTP %d %s, want 404", status, body)
	}

	close(release)
	r := <-called
	if r.err != nil || r.res.IsError || contentText(t, r.res) != "held to the end" {
		t.Fatalf("alice's call after bob's attempts: %+v %v", r.res, r.err)
	}
	if _, err := alice.ListTools(t.Context(), nil); err != nil {
		t.Errorf("alice's session after bob's attempts: %v", err)
	}
}

// TestSessionsCappedPerPrincipal: alice may open MaxSessionsPerPrincipal
// legacy sessions; the next is refused with an error that says what to
// do, while bob still opens one; once alice ends one, she opens another.
func TestSessionsCappedPerPrincipal(t *testing.T) {
	t.Parallel()
	a, tokens := staticTokens(t, "alice", "bob")
	_, url := startGateway(t, &gateway.Options{Auth: a, MaxSessions: 8, MaxSessionsPerPrincipal: 3,
		Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: filesServer(t)}}})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacy + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	open := func(who string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		req.Header.Set("Authorization", "Bearer "+tokens[who])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
		}
		return resp.StatusCode, string(b)
	}
	var sessions []string
	for range 3 {
		status, id := open("alice")
		if status != http.StatusOK || id == "" {
			t.Fatalf("alice opens a session: HTTP %d %s", status, id)
		}
		sessions = append(sessions, id)
	}
	status, body := open("alice")
	if status != http.StatusTooManyRequests || !strings.Contains(body, "-32000") || !strings.Contains(body, "DELETE") {
		t.Errorf("alice's fourth session: HTTP %d %s, want 429 with -32000 saying how to end sessions", status, body)
	}
	for range 3 {
		if status, id := open("bob"); status != http.StatusOK || id == "" {
			t.Fatalf("bob opens a session while alice is at her cap: HTTP %d %s", status, id)
		}
	}
	if status, body := rawAs(t, http.MethodDelete, url, tokens["alice"], sessions[0], ""); status != http.StatusNoContent && status != http.StatusOK {
		t.Fatalf("alice ends a session: HTTP %d %s", status, body)
	}
	if status, id := open("alice"); status != http.StatusOK || id == "" {
		t.Errorf("alice opens a session after ending one: HTTP %d %s", status, id)
	}
}

// getOps GETs path next to the MCP endpoint url, naming host (unless
// empty) and presenting token (unless empty); it returns the status and
// body.
func getOps(t *testing.T, url, path, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, gateway.MCPPath)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestOpsEndpointsGuarded: /healthz and /metrics name the upstreams and
// count their tools' calls. Without auth they answer a loopback host only,
// not a page of another site that DNS rebinding pointed at the gateway
// (421); with auth, /metrics needs a client's token (401 without), and
// /healthz without one says the status alone, for probes.
func TestOpsEndpointsGuarded(t *testing.T) {
	t.Parallel()
	const name = "secret-upstream-name"
	t.Run("anonymous", func(t *testing.T) {
		_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: name, URL: filesServer(t)}}})
		port := url[strings.LastIndex(url, ":")+1 : strings.LastIndex(url, "/")]
		for _, path := range []string{gateway.HealthPath, gateway.MetricsPath} {
			if status, body := getOps(t, url, path, "rebound.example:"+port, ""); status != http.StatusMisdirectedRequest || strings.Contains(body, name) {
				t.Errorf("%s for Host rebound.example: HTTP %d %s, want 421", path, status, body)
			}
			if status, body := getOps(t, url, path, "", ""); status != http.StatusOK || !strings.Contains(body, name) {
				t.Errorf("%s on loopback: HTTP %d %.200s, want 200 naming the upstream", path, status, body)
			}
		}
	})
	t.Run("tokens", func(t *testing.T) {
		a, tokens := staticTokens(t, "prometheus")
		_, url := startGateway(t, &gateway.Options{Auth: a, Upstreams: []gateway.UpstreamSpec{{Name: name, URL: filesServer(t)}}})
		if status, body := getOps(t, url, gateway.MetricsPath, "", ""); status != http.StatusUnauthorized || strings.Contains(body, name) {
			t.Errorf("/metrics without a token: HTTP %d %s, want 401", status, body)
		}
		if status, body := getOps(t, url, gateway.MetricsPath, "", "not-a-token"); status != http.StatusUnauthorized || strings.Contains(body, name) {
			t.Errorf("/metrics with a wrong token: HTTP %d %s, want 401", status, body)
		}
		if status, body := getOps(t, url, gateway.MetricsPath, "", tokens["prometheus"]); status != http.StatusOK || !strings.Contains(body, name) {
			t.Errorf("/metrics with a token: HTTP %d %.200s, want 200 naming the upstream", status, body)
		}
		status, body := getOps(t, url, gateway.HealthPath, "rebound.example", "")
		var h gateway.Health
		if err := json.Unmarshal([]byte(body), &h); status != http.StatusOK || err != nil || h.Status != "ok" || strings.Contains(body, name) {
			t.Errorf("/healthz without a token: HTTP %d %s, want 200 with the status alone", status, body)
		}
		if status, body := getOps(t, url, gateway.HealthPath, "", tokens["prometheus"]); status != http.StatusOK || !strings.Contains(body, name) {
			t.Errorf("/healthz with a token: HTTP %d %.200s, want the whole report", status, body)
		}
	})
}
