//go:build integration

package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestFilesystemPackBypasses puts the gateway in front of the npm
// filesystem server (trusted, so the filesystem pack applies) over a
// directory holding a .env with a token and innocent.txt, a symbolic link
// to it, with redaction from internal up. In both eras: every spelling of
// .env that the server opens as .env (a trailing slash, "." and ".."
// segments), through every tool that shows a file's content, a dry run of
// edit_file included, is withheld; the link is read at internal, so its
// token is redacted; an ordinary file passes untouched.
func TestFilesystemPackBypasses(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{".env": "DEBUG=1\nGITHUB_TOKEN=" + fakeToken + "\n", "notes.txt": "plain notes\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(dir, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	fs := npmServers(t)("fs", "server-filesystem", dir)
	args, _ := json.Marshal(fs.Args)
	_, url, _ := gatewayFromConfig(t, fmt.Sprintf("servers:\n  fs:\n    command: %q\n    args: %s\nredaction:\n  level: internal\n", fs.Command, args))

	edit := func(p string, dry bool) map[string]any {
		return map[string]any{"path": p, "edits": []any{map[string]any{"oldText": "GITHUB_TOKEN=", "newText": "TOKEN="}}, "dryRun": dry}
	}
	var withheld []fsCall
	for _, p := range []string{".env", ".env/", ".env/.", "./.env", "dir/../.env", "dir//.env", filepath.Join(dir, ".env") + "/"} {
		withheld = append(withheld,
			fsCall{"read_text_file", map[string]any{"path": p}},
			fsCall{"read_file", map[string]any{"path": p}},
			fsCall{"read_multiple_files", map[string]any{"paths": []any{"notes.txt", p}}},
			fsCall{"edit_file", edit(p, true)})
	}
	withheld = append(withheld, fsCall{"read_media_file", map[string]any{"path": ".env/."}})

	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			p := &wiretest.Peer{URL: url, Version: era, Capabilities: wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints)}
			defer p.Close()
			for _, c := range withheld {
				raw := c.run(t, p)
				if strings.Contains(raw, fakeToken) || !strings.Contains(raw, "withheld") {
					t.Errorf("%s %v: not withheld: %s", c.tool, c.args, raw)
				}
			}
			// The file on disk is unchanged by the dry runs.
			if b, _ := os.ReadFile(filepath.Join(dir, ".env")); !strings.Contains(string(b), "GITHUB_TOKEN="+fakeToken) {
				t.Errorf(".env changed: %q", b)
			}
			// The link: its name says nothing, so it is read at internal,
			// and the token is redacted.
			for _, c := range []fsCall{
				{"read_text_file", map[string]any{"path": "innocent.txt"}},
				{"read_multiple_files", map[string]any{"paths": []any{"innocent.txt"}}},
				{"edit_file", edit("innocent.txt", true)},
			} {
				if s := c.sensitivity(t, p); s != "internal" {
					t.Errorf("%s %v: resolved at sensitivity %q, want internal", c.tool, c.args, s)
				}
				if raw := c.run(t, p); strings.Contains(raw, fakeToken) || !strings.Contains(raw, "[REDACTED:github-pat]") {
					t.Errorf("%s %v: not redacted: %s", c.tool, c.args, raw)
				}
			}
			if raw := (fsCall{"read_text_file", map[string]any{"path": "notes.txt"}}).run(t, p); !strings.Contains(raw, "plain notes") || strings.Contains(raw, "REDACTED") {
				t.Errorf("notes.txt: %s", raw)
			}
		})
	}
}

// fsCall is one tools/call of the filesystem upstream.
type fsCall struct {
	tool string
	args map[string]any
}

// run makes the call and returns the response as received.
func (c fsCall) run(t *testing.T, p *wiretest.Peer) string {
	t.Helper()
	r := p.Call(t, "tools/call", map[string]any{"name": c.tool, "arguments": c.args})
	if r.Error != nil {
		t.Fatalf("%s %v: %s", c.tool, c.args, r.Raw)
	}
	return string(r.Raw)
}

// sensitivity is the result sensitivity the gateway's tools/resolve gives
// the call.
func (c fsCall) sensitivity(t *testing.T, p *wiretest.Peer) any {
	t.Helper()
	r := p.Call(t, "tools/resolve", map[string]any{"name": c.tool, "arguments": c.args})
	m, _ := r.Result["_meta"].(map[string]any)
	h, _ := m[preflight.MetaPolicyHints].(map[string]any)
	if h == nil {
		t.Fatalf("tools/resolve %s: %s", c.tool, r.Raw)
	}
	return h["resultSensitivity"]
}
