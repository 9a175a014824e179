//go:build integration

package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// TestDesktopStory is the first minutes of a Claude Desktop user: its
// file names two npm reference servers; "preflight connect
// claude-desktop" moves them behind preflight; the desktop starts what
// the file now says, over stdio, as it would: every tool of both servers
// is listed at once, a read runs unasked, a delete (which a desktop
// cannot be asked to confirm) is held with a link to the approval page;
// "preflight login" signs the person in there, they approve, and the
// retry deletes.
func TestDesktopStory(t *testing.T) {
	deps := npmDeps(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (Node.js >= 20 is required): %v", err)
	}
	bin := buildPreflight(t)
	files := t.TempDir()
	writeFile(t, filepath.Join(files, "notes.txt"), "the desktop's notes\n")
	desktop := map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": node, "args": []string{npmdeps.Bin(t, deps, "server-filesystem"), files}},
		"memory": map[string]any{"command": node, "args": []string{npmdeps.Bin(t, deps, "server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
	}, "globalShortcut": "Ctrl+Space"}
	sample, _ := json.MarshalIndent(desktop, "", "  ")
	home := t.TempDir()
	file := lookupClient("claude-desktop").path(homeDirs{goos: runtime.GOOS, home: home})
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, string(sample))

	if code, out, errOut := runMain(t, "connect", "-home", home, "-command", bin, "claude-desktop"); code != exitOK {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	rewritten, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(rewritten, &entry); err != nil || len(entry.MCPServers) != 1 {
		t.Fatalf("the rewritten file: %v\n%s", err, rewritten)
	}

	// The desktop starts preflight as its file says.
	var launch *exec.Cmd
	for _, s := range entry.MCPServers {
		launch = exec.Command(s.Command, s.Args...)
	}
	stderr := &lockedBuffer{}
	launch.Stderr = stderr
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-ai", Version: "0.1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: launch}, nil)
	if err != nil {
		t.Fatalf("the desktop's launch: %v\n%s", err, stderr.String())
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"filesystem__read_text_file", "filesystem__write_file", "memory__create_entities", "memory__delete_entities"} {
		if !slices.Contains(names, want) {
			t.Errorf("the first tools/list lacks %s: %v", want, names)
		}
	}

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call("filesystem__read_text_file", map[string]any{"path": filepath.Join(files, "notes.txt")}); r.IsError || !strings.Contains(resultText(r), "the desktop's notes") {
		t.Errorf("the read: %s", resultText(r))
	}
	if r := call("memory__create_entities", map[string]any{"entities": []any{map[string]any{"name": "alice", "entityType": "person", "observations": []string{"likes tea"}}}}); r.IsError {
		t.Fatalf("create_entities: %s", resultText(r))
	}
	del := map[string]any{"entityNames": []string{"alice"}}
	held := call("memory__delete_entities", del)
	m := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/ui/approvals/([A-Za-z0-9_-]+)`).FindStringSubmatch(resultText(held))
	if !held.IsError || m == nil {
		t.Fatalf("the delete was not held for the page: %s", resultText(held))
	}
	if r := call("memory__read_graph", map[string]any{}); !strings.Contains(resultText(r), "alice") {
		t.Fatalf("the held delete ran: %s", resultText(r))
	}

	// The person gets a link with preflight login and approves.
	code, out, errOut := runMain(t, "login")
	lm := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(m[1]) + `/ui/login\?token=(\S+)$`).FindStringSubmatch(out)
	if code != exitOK || lm == nil {
		t.Fatalf("login: exit %d, no link to %s:\n%s%s", code, m[1], out, errOut)
	}
	b := signedInBrowser(t, m[1], lm[1])
	page := b.get(m[1] + "/ui/approvals/" + m[2])
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil || !strings.Contains(page, "delete_entities") {
		t.Fatalf("the request's page:\n%s", page)
	}
	b.post(m[1]+"/ui/approvals/"+m[2]+"/approve", map[string][]string{"csrf": {csrf[1]}})

	if r := call("memory__delete_entities", del); r.IsError {
		t.Fatalf("the approved retry: %s", resultText(r))
	}
	if r := call("memory__read_graph", map[string]any{}); strings.Contains(resultText(r), "alice") {
		t.Errorf("the approved delete did not run: %s", resultText(r))
	}
}

// resultText is a tool result's text content.
func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
