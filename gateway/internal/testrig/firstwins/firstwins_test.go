package firstwins_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins"
)

// TestFirstWinsAgrees: without repeated keys, FirstWins decodes as
// json.Unmarshal does, and refuses what it refuses.
func TestFirstWinsAgrees(t *testing.T) {
	valid := []string{
		`null`, `true`, `false`, `0`, `-0`, `1.5e3`, `-12.25`, `9007199254740993`,
		`""`, `"x"`, `"\u00e9\ud800\n\"\\\/"`, "\"\xff\xfe bad utf-8\"",
		`[]`, `{}`, ` [1, "a", null, {"b": [true, {}]}] `,
		`{"a":{"b":[1,{"c":null}]},"\u0062":"escaped key","":0}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files","arguments":{"action":"read","path":"a.txt"}}}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	}
	invalid := []string{
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `nul`, `01`, `1 2`, `{} x`,
		"\"\x01\"", `"\x"`, `1e400`, `[1]]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	}
	for _, in := range valid {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("json.Unmarshal(%.40q): %v", in, err)
		}
		got, err := firstwins.FirstWins([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("FirstWins(%.40q) = %v, %v; json.Unmarshal: %v", in, got, err, want)
		}
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var wantN any
		if err := dec.Decode(&wantN); err != nil {
			t.Fatal(err)
		}
		gotN, err := firstwins.FirstWinsNumber([]byte(in))
		if err != nil || !reflect.DeepEqual(gotN, wantN) {
			t.Errorf("FirstWinsNumber(%.40q) = %v, %v; Decoder.UseNumber: %v", in, gotN, err, wantN)
		}
	}
	for _, in := range invalid {
		var v any
		if json.Unmarshal([]byte(in), &v) == nil {
			t.Fatalf("json.Unmarshal(%.40q) accepted it", in)
		}
		if got, err := firstwins.FirstWins([]byte(in)); err == nil {
			t.Errorf("FirstWins(%.40q) = %v, want an error", in, got)
		}
	}
}

// TestFirstWinsRepeated: a repeated member keeps its first value at every
// depth, where json.Unmarshal keeps the last.
func TestFirstWinsRepeated(t *testing.T) {
	for _, tc := range []struct{ in, first, last string }{
		{`{"a":1,"a":2}`, `{"a":1}`, `{"a":2}`},
		{`{"a":1,"\u0061":2}`, `{"a":1}`, `{"a":2}`},
		{`{"x":{"a":"first","b":0,"a":"last"}}`, `{"x":{"a":"first","b":0}}`, `{"x":{"a":"last","b":0}}`},
		{`[{"k":[1],"k":{"n":2}}]`, `[{"k":[1]}]`, `[{"k":{"n":2}}]`},
		{`{"a":{"b":1},"a":{"c":2}}`, `{"a":{"b":1}}`, `{"a":{"c":2}}`},
		{`{"params":{"arguments":{"action":"delete","path":"a.txt","action":"read"}}}`,
			`{"params":{"arguments":{"action":"delete","path":"a.txt"}}}`,
			`{"params":{"arguments":{"action":"read","path":"a.txt"}}}`},
	} {
		got, err := firstwins.FirstWins([]byte(tc.in))
		if err != nil {
			t.Fatalf("FirstWins(%s): %v", tc.in, err)
		}
		var first, last, std any
		json.Unmarshal([]byte(tc.first), &first)
		json.Unmarshal([]byte(tc.last), &last)
		if err := json.Unmarshal([]byte(tc.in), &std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, first) {
			t.Errorf("FirstWins(%s) = %v, want %s", tc.in, got, tc.first)
		}
		if !reflect.DeepEqual(std, last) {
			t.Errorf("json.Unmarshal(%s) = %v, want %s", tc.in, std, tc.last)
		}
		if reflect.DeepEqual(got, std) {
			t.Errorf("FirstWins(%s) agrees with json.Unmarshal", tc.in)
		}
	}
}

// rig is a folder with a.txt and b.txt, and the journal's path.
type rig struct{ dir, journal string }

func newRig(t *testing.T) rig {
	t.Helper()
	dir := t.TempDir()
	r := rig{dir: filepath.Join(dir, "files"), journal: filepath.Join(dir, "journal.jsonl")}
	if err := os.Mkdir(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "alpha", "b.txt": "bravo", "../outside.txt": "secret"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "outside.txt"), filepath.Join(r.dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r rig) args(era string) []string {
	return []string{"-dir", r.dir, "-journal", r.journal, "-era", era}
}

// startHTTP runs the server over HTTP and returns its URL; the server is
// interrupted at cleanup and must exit cleanly.
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(firstwins.Build(t), append(args, "-http", "127.0.0.1:0")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("firstwins -http: %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("firstwins -http printed no URL: %v\n%s", err, stderr.String())
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("URL line %q", url)
	}
	return url
}

// TestSDKClient: the go-sdk client lists, reads and deletes through the
// server in both eras, over stdio and HTTP; the journal has each executed
// call.
func TestSDKClient(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, tc := range []struct {
			era, client, want string // client: pinned version, "" for the SDK's probe
		}{
			{"both", "", "2026-07-28"},
			{"both", "2025-11-25", "2025-11-25"},
			{"2026-07-28", "", "2026-07-28"},
			{"2025-11-25", "", "2025-11-25"}, // probe, -32601, fall back to initialize
			{"2026-07-28", "2025-11-25", ""}, // no common version
		} {
			t.Run(transport+"/era="+tc.era+"/client="+tc.client, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r := newRig(t)
				var tr mcp.Transport
				if transport == "stdio" {
					tr = &mcp.CommandTransport{Command: exec.Command(firstwins.Build(t), r.args(tc.era)...)}
				} else {
					tr = &mcp.StreamableClientTransport{Endpoint: startHTTP(t, r.args(tc.era)...), MaxRetries: -1}
				}
				c := mcp.NewClient(&mcp.Implementation{Name: "firstwins-test", Version: "1"}, nil)
				cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: tc.client})
				if tc.want == "" {
					if err == nil {
						cs.Close()
						t.Fatal("Connect succeeded with no common protocol version")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := cs.InitializeResult().ProtocolVersion; got != tc.want {
					t.Errorf("protocol version %q, want %q", got, tc.want)
				}
				if si := cs.InitializeResult().ServerInfo; si == nil || si.Name != "firstwins" || si.Version != "0.1.0" {
					t.Errorf("server info %+v", si)
				}
				if transport == "http" && (cs.ID() != "") != (tc.want == "2025-11-25") {
					t.Errorf("session ID %q in era %s", cs.ID(), tc.want)
				}

				lt, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(lt.Tools) != 1 || lt.Tools[0].Name != "files" {
					t.Fatalf("tools %+v", lt.Tools)
				}
				tool := lt.Tools[0]
				if a := tool.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
					t.Errorf("annotations %+v", a)
				}
				schema, _ := json.Marshal(tool.InputSchema)
				if want := `{"properties":{"action":{"enum":["read","delete"],"type":"string"},"path":{"type":"string"}},"required":["action","path"],"type":"object"}`; string(schema) != want {
					t.Errorf("input schema %s, want %s", schema, want)
				}

				call := func(action, path string) *mcp.CallToolResult {
					t.Helper()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files", Arguments: map[string]any{"action": action, "path": path}})
					if err != nil {
						t.Fatalf("%s %s: %v", action, path, err)
					}
					return res
				}
				res := call("read", "a.txt")
				if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "alpha" {
					t.Errorf("read a.txt: %+v", res)
				}
				if res := call("delete", "b.txt"); res.IsError {
					t.Errorf("delete b.txt: %+v", res.Content[0])
				}
				if _, err := os.Stat(filepath.Join(r.dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("b.txt after delete: %v", err)
				}
				for _, path := range []string{"../outside.txt", "/etc/hostname", "x/../a.txt"} {
					if res := call("read", path); !res.IsError {
						t.Errorf("read %s: not refused: %+v", path, res.Content[0])
					}
				}
				// Journaled (the path is lexically inside), then refused by os.Root.
				if res := call("read", "link.txt"); !res.IsError {
					t.Errorf("read link.txt (out of the folder): not refused: %+v", res.Content[0])
				}
				_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
				if werr := (*jsonrpc.Error)(nil); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
					t.Errorf("unknown tool: %v, want error %d", err, jsonrpc.CodeInvalidParams)
				}
				if err := cs.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}

				want := []firstwins.Entry{
					{Tool: "files", Action: "read", Path: "a.txt", Args: map[string]any{"action": "read", "path": "a.txt"}},
					{Tool: "files", Action: "delete", Path: "b.txt", Args: map[string]any{"action": "delete", "path": "b.txt"}},
					{Tool: "files", Action: "read", Path: "link.txt", Args: map[string]any{"action": "read", "path": "link.txt"}},
				}
				if got := firstwins.ReadJournal(t, r.journal); !reflect.DeepEqual(got, want) {
					t.Errorf("journal:\n got %+v\nwant %+v", got, want)
				}
			})
		}
	}
}

// ambiguous deletes in this server and reads in encoding/json.
const ambiguous = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files","arguments":{"action":"delete","path":"a.txt","action":"read"}}}`

// TestRawStdio: on the wire, the ambiguous call is executed as a delete
// (first wins); unreadable and unknown input is answered and the server
// keeps going; it exits cleanly at the end of stdin.
func TestRawStdio(t *testing.T) {
	r := newRig(t)
	cmd := exec.Command(firstwins.Build(t), r.args("both")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	// exchange sends line and returns the answer's id and error code (0 for
	// a result), and the result.
	exchange := func(line string) (id any, code float64, result map[string]any) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %.60q: %v\n%s", line, err, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(resp), &m); err != nil {
			t.Fatalf("answer %q: %v", resp, err)
		}
		if e, ok := m["error"].(map[string]any); ok {
			code, _ = e["code"].(float64)
		}
		result, _ = m["result"].(map[string]any)
		return m["id"], code, result
	}
	expect := func(line string, wantCode float64) map[string]any {
		t.Helper()
		_, code, result := exchange(line)
		if code != wantCode {
			t.Errorf("%.80q: code %v, want %v", line, code, wantCode)
		}
		return result
	}

	expect(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, -32600) // before initialize
	expect(`{bad json`, -32700)
	expect(`[]`, -32600)
	expect(`42`, -32600)
	expect(strings.Repeat("[", 20000), -32700)
	expect(`{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600)
	expect(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, 0)
	res := expect(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, 0)
	if res["protocolVersion"] != "2025-11-25" {
		t.Errorf("initialize: %v", res)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n\n"); err != nil {
		t.Fatal(err)
	}
	expect(`{"jsonrpc":"2.0","id":4,"method":"nope/nope"}`, -32601)
	expect(`{"jsonrpc":"2.0","id":5,"method":"server/discover"}`, -32601) // no _meta: legacy
	expect(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, -32602)

	id, code, res := exchange(ambiguous)
	if id != 3.0 || code != 0 || res["isError"] == true {
		t.Fatalf("ambiguous call: id %v, code %v, result %v", id, code, res)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a.txt after the ambiguous call: %v (want deleted)", err)
	}
	// A 2026-07-28 request: the same rule, with no initialize needed.
	modern := `{"jsonrpc":"2.0","id":"m1","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"files","arguments":{"path":"b.txt","action":"delete","path":"a.txt"}}}`
	id, code, res = exchange(modern)
	if id != "m1" || code != 0 || res["resultType"] != "complete" || res["isError"] == true {
		t.Fatalf("modern call: id %v, code %v, result %v", id, code, res)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt after the modern call: %v (want deleted)", err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit at end of stdin: %v\n%s", err, stderr.String())
	}
	want := []firstwins.Entry{
		{Tool: "files", Action: "delete", Path: "a.txt", Args: map[string]any{"action": "delete", "path": "a.txt"}},
		{Tool: "files", Action: "delete", Path: "b.txt", Args: map[string]any{"action": "delete", "path": "b.txt"}},
	}
	if got := firstwins.ReadJournal(t, r.journal); !reflect.DeepEqual(got, want) {
		t.Errorf("journal:\n got %+v\nwant %+v", got, want)
	}
}

// TestRawHTTP: session rules of 2025-11-25, headers of 2026-07-28, and the
// ambiguous call over HTTP.
func TestRawHTTP(t *testing.T) {
	r := newRig(t)
	url := startHTTP(t, r.args("both")...)
	post := func(body string, header map[string]string) (*http.Response, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp, m
	}
	status := func(resp *http.Response, want int) {
		t.Helper()
		if resp.StatusCode != want {
			t.Errorf("status %d, want %d", resp.StatusCode, want)
		}
	}

	resp, _ := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	status(resp, http.StatusBadRequest) // no session
	resp, _ = post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "nope"})
	status(resp, http.StatusNotFound)
	resp, m := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	status(resp, http.StatusOK)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" || m["result"] == nil {
		t.Fatalf("initialize: session %q, answer %v", sid, m)
	}
	legacy := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	resp, _ = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, legacy)
	status(resp, http.StatusAccepted)
	resp, m = post(ambiguous, legacy)
	status(resp, http.StatusOK)
	if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("ambiguous call: %v", m)
	}
	resp, _ = post(`{bad`, legacy)
	status(resp, http.StatusBadRequest)

	for _, step := range []struct {
		method string
		want   int
	}{
		{http.MethodGet, http.StatusMethodNotAllowed},
		{http.MethodDelete, http.StatusNoContent},
		{http.MethodDelete, http.StatusNotFound}, // already ended
	} {
		req, _ := http.NewRequest(step.method, url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != step.want {
			t.Errorf("%s: status %d, want %d", step.method, resp.StatusCode, step.want)
		}
	}
	resp, _ = post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, legacy)
	status(resp, http.StatusNotFound) // session ended

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	modern := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "files"}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + meta + `,"name":"files","arguments":{"action":"delete","path":"b.txt","action":"read"}}}`
	resp, _ = post(call, map[string]string{"Mcp-Protocol-Version": "2026-07-28"})
	status(resp, http.StatusBadRequest) // no Mcp-Method, Mcp-Name
	resp, _ = post(strings.Replace(call, `"name":"files"`, `"name":"files","name":"other"`, 1), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"})
	status(resp, http.StatusBadRequest) // Mcp-Name is the last name, not the first
	resp, m = post(call, modern)
	status(resp, http.StatusOK)
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("2026-07-28 answer has a session")
	}
	if res, _ := m["result"].(map[string]any); res == nil || res["resultType"] != "complete" || res["isError"] == true {
		t.Errorf("modern ambiguous call: %v", m)
	}
	resp, m = post(`{"jsonrpc":"2.0","id":8,"method":"nope",`+"\"params\":{"+meta+"}}", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "nope"})
	status(resp, http.StatusNotFound)
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32601.0 {
		t.Errorf("unknown method: %v", m)
	}

	want := []firstwins.Entry{
		{Tool: "files", Action: "delete", Path: "a.txt", Args: map[string]any{"action": "delete", "path": "a.txt"}},
		{Tool: "files", Action: "delete", Path: "b.txt", Args: map[string]any{"action": "delete", "path": "b.txt"}},
	}
	if got := firstwins.ReadJournal(t, r.journal); !reflect.DeepEqual(got, want) {
		t.Errorf("journal:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzFirstWins: FirstWins never panics and refuses exactly what
// json.Unmarshal refuses.
func FuzzFirstWins(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[{"k":[1],"k":{}}]`, `"\ud800"`, `1e400`, `{"a" 1}`, ambiguous} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		stdErr := json.Unmarshal(data, &v)
		_, err := firstwins.FirstWins(data)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("FirstWins(%q): %v; json.Unmarshal: %v", data, err, stdErr)
		}
	})
}
