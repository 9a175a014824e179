//go:build integration

package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestConfirmReferenceServer puts the npm filesystem server (a 2025-11-25
// upstream over stdio) behind a gateway with decisions on: its write_file
// (destructiveHint true: it overwrites) is confirmed in both client eras;
// a decline leaves the file as it was, an accept writes it once, and the
// accepted state sent again is refused.
func TestConfirmReferenceServer(t *testing.T) {
	spec := npmServers(t)
	files := t.TempDir()
	_, url := startGateway(t, &gateway.Options{Decisions: &stage.DecideOptions{},
		Upstreams: []gateway.UpstreamSpec{spec("filesystem", "server-filesystem", files)}})
	target := filepath.Join(files, "kept.txt")
	content := func() string {
		t.Helper()
		b, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := os.WriteFile(target, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("modern", func(t *testing.T) {
		p := wiretest.Stateless(url, elicitCaps)
		args := map[string]any{"path": target, "content": "modern"}
		state, msg := confirmQuestion(t, p.Call(t, "tools/call", toolCall("write_file", args, nil, "")))
		if !strings.Contains(msg, "Server: filesystem") || !strings.Contains(msg, "content: modern") {
			t.Errorf("message: %s", msg)
		}
		r := p.Call(t, "tools/call", toolCall("write_file", args, map[string]any{"action": "decline"}, state))
		if r.Result["isError"] != true || !strings.Contains(resultText(r), "declined") || content() != "original" {
			t.Fatalf("declined: %s (file: %q)", r.Raw, content())
		}
		other := map[string]any{"path": target, "content": "forged"}
		if r := p.Call(t, "tools/call", toolCall("write_file", other, accept(), state)); r.Error == nil || r.Error.Code != -32602 || content() != "original" {
			t.Fatalf("state for other arguments: %s (file: %q)", r.Raw, content())
		}
		r = p.Call(t, "tools/call", toolCall("write_file", args, accept(), state))
		if r.Error != nil || r.Result["isError"] == true || content() != "modern" {
			t.Fatalf("accepted: %s (file: %q)", r.Raw, content())
		}
		if err := os.WriteFile(target, []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := p.Call(t, "tools/call", toolCall("write_file", args, accept(), state)); r.Error == nil || r.Error.Code != -32602 || content() != "original" {
			t.Fatalf("replayed: %s (file: %q)", r.Raw, content())
		}
	})
	t.Run("legacy", func(t *testing.T) {
		a := &legacyAnswers{action: "decline", release: make(chan struct{})}
		cs := connect(t, url, legacy, nil, &mcp.ClientOptions{ElicitationHandler: a.elicit})
		call := func() *mcp.CallToolResult {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": target, "content": "legacy"}})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := call(); !res.IsError || !strings.Contains(contentText(t, res), "declined") || content() != "original" {
			t.Fatalf("declined: %s (file: %q)", contentText(t, res), content())
		}
		a.set("accept")
		if res := call(); res.IsError || content() != "legacy" {
			t.Fatalf("accepted: %s (file: %q)", contentText(t, res), content())
		}
	})
}
