package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/internal/wiretest"
)

// leakyPAT is a GitHub token in gitleaks' format; leakyFullwidth spells
// it in fullwidth letters.
const leakyPAT = fakeToken

func leakyFullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// leakyServer puts secrets everywhere an upstream's text reaches a client:
// results split across blocks and disguised, _meta, annotations, errors,
// progress, resources and prompts.
func leakyServer() *mcp.Server {
	label := mcp.Meta{"io.modelcontextprotocol/trust-annotations": map[string]any{"sensitive": true}}
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "leak", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "using " + leakyPAT})
			}
			return &mcp.CallToolResult{
				Meta: mcp.Meta{"debug": "key " + awsKey},
				Content: []mcp.Content{
					&mcp.TextContent{Text: "token: " + leakyPAT[:12]},
					&mcp.TextContent{Text: leakyPAT[12:] + " ok", Annotations: &mcp.Annotations{LastModified: leakyFullwidth(leakyPAT)}},
					&mcp.TextContent{Text: "url https://x.test/?t=" + strings.ReplaceAll(leakyPAT, "_", "%5F"), Meta: mcp.Meta{"k": awsKey}},
				},
			}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32000, Message: "bad credentials " + leakyPAT, Data: json.RawMessage(`{"key":"` + awsKey + `"}`)}
		})
	s.AddResource(&mcp.Resource{URI: "file:///env", Name: "env"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Meta: label, Contents: []*mcp.ResourceContents{{URI: "file:///env", Text: "GITHUB_TOKEN=" + leakyPAT, Meta: mcp.Meta{"k": awsKey}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "deploy"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Meta: label, Description: "uses " + awsKey,
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "push with " + leakyPAT}}}}, nil
		})
	return s
}

// TestRedactionCoversEveryPath: whatever member, method or path a secret
// of the upstream's takes (a result split across blocks or disguised, its
// _meta and annotations, an error's message and data, a progress
// notification, a resource read, a prompt), the client never sees it, in
// both eras on both sides.
func TestRedactionCoversEveryPath(t *testing.T) {
	for _, upEra := range []string{modern, legacy} {
		t.Run("upstream "+upEra, func(t *testing.T) {
			_, url, _ := gatewayFromConfig(t, fmt.Sprintf(`
servers:
  leaky:
    url: %s
    prefix: ""
    overrides:
      leak: {hints: {resultSensitivity: confidential}}
      fail: {hints: {resultSensitivity: confidential}}
audit: {store: "off"}
`, serveEra(t, leakyServer(), upEra)))
			for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
				for _, c := range []struct {
					method string
					params map[string]any
				}{
					{"tools/call", map[string]any{"name": "leak", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p1"}}},
					{"tools/call", map[string]any{"name": "fail", "arguments": map[string]any{}}},
					{"resources/read", map[string]any{"uri": "file:///env"}},
					{"prompts/get", map[string]any{"name": "deploy"}},
				} {
					r := p.Call(t, c.method, c.params)
					all := string(r.Raw)
					for _, b := range r.Before {
						all += "\n" + string(b)
					}
					for _, secret := range []string{leakyPAT, leakyPAT[:12], leakyPAT[12:], leakyFullwidth(leakyPAT), strings.ReplaceAll(leakyPAT, "_", "%5F"), awsKey} {
						if strings.Contains(all, secret) {
							t.Errorf("%s %s %v: the client saw %q:\n%s", p.Version, c.method, c.params["name"], secret, all)
						}
					}
					if !strings.Contains(all, "[REDACTED:") {
						t.Errorf("%s %s %v: nothing redacted:\n%s", p.Version, c.method, c.params["name"], all)
					}
					if c.params["name"] == "leak" && len(r.Before) == 0 {
						t.Errorf("%s leak: no progress notification reached the client", p.Version)
					}
				}
				p.Close()
			}
		})
	}
}

// fakeToken is a GitHub token in the form gitleaks' github-pat rule finds.
const fakeToken = "ghp_R7tW1vB6nC0yH5jD3sA2eU1k8f3kK2mZ9qL4"
