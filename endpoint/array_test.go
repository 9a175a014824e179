package endpoint

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/wiretest"
)

// arrays are JSON arrays a peer may send where one message belongs: the
// empty batch, a batch of a non-message, and batches of real messages
// (batches left the protocol in 2025-06-18).
var arrays = []string{
	`[]`,
	`[1]`,
	`  [ {"jsonrpc":"2.0","id":1,"method":"ping"} ]`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
}

// TestHTTPArrays: a POST whose body is a JSON array gets -32600 with id
// null in a JSON body, whichever SDK handler its headers point at, and the
// endpoint goes on serving. The SDK alone answers 400 in plain text, or
// serves a batch to a header-less request.
func TestHTTPArrays(t *testing.T) {
	hs := httptest.NewServer(NewHandler(newTestServer(), nil))
	defer hs.Close()
	legacy := wiretest.Legacy(hs.URL, nil)
	legacy.Initialize(t)
	defer legacy.Close()
	peers := map[string]*wiretest.Peer{
		"2026-07-28":            wiretest.Stateless(hs.URL, nil),
		"2025-11-25 session":    legacy,
		"no header, no session": {URL: hs.URL, Version: "2025-11-25"},
	}
	for name, p := range peers {
		for _, body := range arrays {
			status, r := p.PostRaw(t, []byte(body))
			if status != 400 || r == nil || r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "null" ||
				!strings.Contains(r.Error.Message, "batches") {
				t.Errorf("%s: %s: HTTP %d, %+v", name, body, status, r)
			}
		}
	}
	if r := peers["2026-07-28"].Call(t, "tools/list", nil); r.Error != nil {
		t.Errorf("2026-07-28 tools/list after arrays: %s", r.Raw)
	}
	if r := legacy.Call(t, "tools/list", nil); r.Error != nil {
		t.Errorf("session tools/list after arrays: %s", r.Raw)
	}
}

// stdioServerEnv makes the test binary a stdio server (see TestMain).
const stdioServerEnv = "PREFLIGHT_ENDPOINT_TEST_STDIO_SERVER"

// TestStdioProcessArrays runs ServeStdio in a child process on its real
// stdin and stdout: arrays and other bad lines are answered, in both eras,
// and the process exits 0 when its input ends. Before, an array ended the
// server with exit status 1.
func TestStdioProcessArrays(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), stdioServerEnv+"=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			replies := bufio.NewScanner(stdout)
			send := func(line string) map[string]any {
				t.Helper()
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
				if !replies.Scan() {
					t.Fatalf("no reply to %s: %v", line, replies.Err())
				}
				var m map[string]any
				if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
					t.Fatalf("reply %q: %v", replies.Text(), err)
				}
				return m
			}
			list := `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
			if era == "2025-11-25" {
				m := send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				if r, _ := m["result"].(map[string]any); r["protocolVersion"] != era {
					t.Fatalf("initialize: %v", m)
				}
				if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
					t.Fatal(err)
				}
				list = `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`
			}
			for _, line := range arrays {
				m := send(line)
				if e, _ := m["error"].(map[string]any); e["code"] != -32600.0 || m["id"] != nil {
					t.Errorf("%s: %v, want -32600 with id null", line, m)
				}
			}
			if m := send(list); !hasResult(m) {
				t.Errorf("tools/list after arrays: %v", m)
			}
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("the server exited with %v, want status 0", err)
			}
		})
	}
}
