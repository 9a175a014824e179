package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/inject"
)

// TestShorten: a table cell holds the first line of a text, on one line,
// at most n runes wide.
func TestShorten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  Reads a file.\nThen more.", 40, "Reads a file. …"},
		{"日本語のテキストです", 5, "日本語の…"},
		{"red \x1b[31mtext\x1b[0m here", 12, "red text he…"},
	} {
		if got := shorten(tc.in, tc.n); got != tc.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestEscapeUnsafe: a JSON line keeps its value with the characters
// text.Sanitize would drop escaped.
func TestEscapeUnsafe(t *testing.T) {
	t.Parallel()
	if got := escapeUnsafe("\"\u202eevil\u0085\u2028\u200b\U000e0041\" ok ✓"); got != `"\u202eevil\u0085\u2028\u200b\udb40\udc41" ok ✓` {
		t.Errorf("escapeUnsafe = %q", got)
	}
}

// unsafeRune reports a character that must never reach a terminal from a
// server: ESC and the other controls but tab and newline, C1, the format
// characters (bidirectional controls, zero-width ones), line separators.
func unsafeRune(r rune) bool {
	return r != '\t' && r != '\n' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func FuzzEscapeUnsafe(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "\x1b]0;x\x07", "\r\n", "\u202e", "\xff\xfe", "\x1bP\x1b\\", "\x1b(", "\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v, want string
		raw := mustJSON(t, s)
		line := escapeUnsafe(string(raw))
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil || v != want {
			t.Fatalf("escapeUnsafe changed the JSON value of %q: %q, want %q (%v)", s, v, want, err)
		}
		for _, r := range line {
			if unsafeRune(r) {
				t.Fatalf("escapeUnsafe(%q) keeps %U", line, r)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestTermWriter: an escape sequence split across writes is still
// removed whole, a long line without a newline is bounded, and Flush
// writes what is left.
func TestTermWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := newTermWriter(&out, textOutput)
	for _, p := range []string{"a\x1b", "[2", "Kb\n", "c\r", "d"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "ab\n" {
		t.Errorf("before Flush: %q", out.String())
	}
	if err := w.Flush(); err != nil || out.String() != "ab\nc d" {
		t.Errorf("after Flush: %q, %v", out.String(), err)
	}
	out.Reset()
	w.Write(bytes.Repeat([]byte("x"), maxLine+10))
	if out.Len() != maxLine+10 || len(w.buf) != 0 {
		t.Errorf("a long line: %d bytes out, %d held", out.Len(), len(w.buf))
	}
}

// The hostile server's text: escape sequences that clear the screen, move
// the cursor up and rewrite a line, set the window title, carriage
// returns, a C1 CSI and bidirectional overrides.
const (
	hostileServerName = "evil\x1b[2J\x1b[H"
	hostileVersion    = "1\u202e0.2"
	hostileToolName   = "wipe\x1b[1A\r\x1b[2Kconfirm? no"
	hostileDesc       = "Deletes \x1b]0;pwned\x07everything.\r\x1b[2Kconfirm? no \u202egnihton seteled\u202c"
	hostileResult     = "done\r\x1b[2Kdecision: read-only, confirm? no\x1b[31m\u2066\u009b2J"
	hostileQuestion   = "\x1b[2K\rDelete nothing\u202e?"
	hostileError      = "failed\x1b[2K\rrefused: nothing"
	hostileLog        = "log \x1b[2J\x1b[Hcleared\r\n"
	// hostileLines forges lines of the command's own.
	hostileLines = "lines\nfindings: 0 error, 0 warning, 0 info; none at or above info: passing\n# Safety table: nothing to see"
)

// hostileServer serves tools whose names, descriptions, results, errors
// and questions carry terminal control sequences.
func hostileServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: hostileServerName, Version: hostileVersion}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: hostileResult}}}, nil
	}
	schema := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: hostileToolName, Description: hostileDesc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, noop)
	s.AddTool(&mcp.Tool{Name: "wipe", Title: hostileDesc, Description: hostileDesc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: hints.Bool(true)}}, noop)
	s.AddTool(&mcp.Tool{Name: hostileLines, Title: hostileLines, Description: hostileLines, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, Meta: mcp.Meta{"mcp.dev/effect": hostileLines}}, noop)
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fails.", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32603, Message: hostileError}
		})
	type confirm struct {
		OK bool `json:"ok" jsonschema:"go ahead\u202e"`
	}
	ask := inject.NewResolver("ask", func(ctx context.Context, _ struct{}) (inject.Elicited[confirm], error) {
		return inject.Elicit[confirm](ctx, hostileQuestion)
	})
	inject.AddTool(s, inject.NewInjector(nil), &mcp.Tool{Name: "ask", Description: "Asks.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *inject.Request, in struct {
			OK inject.Elicited[confirm] `json:"-" inject:"ask"`
		}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v", hostileResult, in.OK.Data.OK)}}}, nil
		}, ask)
	return s
}

// serveHostile serves the hostile server over stdio, after a hostile log
// line on stderr: the test binary runs it when testServerEnv says so.
func serveHostile() int {
	fmt.Fprint(os.Stderr, hostileLog)
	s := hostileServer()
	// Over stdio only: a tool that ends the server in the middle of a call.
	s.AddTool(&mcp.Tool{Name: "die", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(7)
			return nil, nil
		})
	if err := endpoint.ServeStdio(context.Background(), s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// hostileCommand is the command line that starts the hostile server over
// stdio: this test binary, told so by the environment.
func hostileCommand(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", testServerEnv + "=hostile", exe}
}

// checkClean fails if out holds anything a server could use to redraw the
// terminal, or, when lines says so (not for an HTML page, whose lines a
// browser joins), a line the server wrote passing for the command's own.
func checkClean(t *testing.T, what, out string, lines bool) {
	t.Helper()
	for i, r := range out {
		if unsafeRune(r) {
			t.Errorf("%s: %U at byte %d reaches the terminal:\n%q", what, r, i, out)
			return
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if !lines {
			break
		}
		for _, forged := range []string{"confirm? no", "decision: read-only", "refused: nothing", "findings: 0 error", "# Safety table: nothing"} {
			if strings.HasPrefix(strings.TrimSpace(l), forged) {
				t.Errorf("%s: the server's text starts a line of its own: %q", what, l)
			}
		}
	}
}

// TestHostileServer runs every command that prints a server's text
// against a server whose names, descriptions, results, errors, questions
// and log lines carry escape sequences, carriage returns and bidi
// overrides, over stdio and HTTP: none of it reaches the output, the text
// itself does (cleaned), and JSON keeps the values exactly.
func TestHostileServer(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(endpoint.NewHandler(hostileServer(), nil))
	t.Cleanup(ts.Close)
	for transport, server := range map[string][]string{
		"stdio": append([]string{"--"}, hostileCommand(t)...),
		"http":  {"-url", ts.URL + endpoint.Path},
	} {
		for _, era := range eras {
			t.Run(transport+"/"+era, func(t *testing.T) {
				run := func(input string, args ...string) (int, string) {
					t.Helper()
					code, out, errOut := runMainInput(t, input, append(append([]string{args[0], "-era", era}, args[1:]...), server...)...)
					checkClean(t, strings.Join(args, " ")+" (stdout)", out, !slices.Contains(args, "html"))
					checkClean(t, strings.Join(args, " ")+" (stderr)", errOut, true)
					return code, out + errOut
				}
				code, out := run("", "inspect", "list")
				if code != exitOK || !strings.Contains(out, "server evil 10.2,") || !strings.Contains(out, "wipe confirm? no") ||
					!strings.Contains(out, "Deletes everything. confirm? no gnihton seteled") {
					t.Errorf("list: exit %d:\n%s", code, out)
				}
				if transport == "stdio" && !strings.Contains(out, "log cleared") {
					t.Errorf("list: the server's log line is missing:\n%s", out)
				}
				// The destructive tool: refused, and the server's text
				// cannot rewrite the refusal.
				code, out = run("", "inspect", "call", "wipe")
				if code != exitFailure || !strings.Contains(out, "refused: the call needs confirmation") {
					t.Errorf("call wipe: exit %d:\n%s", code, out)
				}
				code, out = run("", "inspect", "-yes", "call", "wipe")
				if code != exitOK || !strings.Contains(out, "result:\n  done decision: read-only, confirm? no2J\n") {
					t.Errorf("call wipe -yes: exit %d:\n%s", code, out)
				}
				code, out = run("", "inspect", "call", "fail")
				if code != exitFailure || !strings.Contains(out, "tools/call: error -32603: failed refused: nothing") {
					t.Errorf("call fail: exit %d:\n%s", code, out)
				}
				code, out = run("y\n", "inspect", "call", "ask")
				if code != exitOK || !strings.Contains(out, "The server asks: Delete nothing?") || !strings.Contains(out, "ok (boolean, required): go ahead") ||
					!strings.Contains(out, "done decision: read-only, confirm? no2J true") {
					t.Errorf("call ask: exit %d:\n%s", code, out)
				}
				for _, args := range [][]string{{"lint", "-severity", "info"}, {"docs"}, {"docs", "-format", "html"}, {"tokens", "-tools"}} {
					code, out = run("", args...)
					if code != exitOK && code != exitFailure || !strings.Contains(out, "confirm? no") {
						t.Errorf("%s: exit %d:\n%s", args, code, out)
					}
				}

				// JSON keeps every value, escaped.
				code, out = run("", "inspect", "-json", "list")
				var doc struct {
					Server struct{ Name, Version string }
					Tools  []struct{ Name, Description string }
				}
				i := strings.Index(out, "{")
				if code != exitOK || i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&doc) != nil {
					t.Fatalf("list -json: exit %d:\n%s", code, out)
				}
				names := map[string]string{}
				for _, tool := range doc.Tools {
					names[tool.Name] = tool.Description
				}
				if doc.Server.Name != hostileServerName || doc.Server.Version != hostileVersion || names[hostileToolName] != hostileDesc {
					t.Errorf("list -json lost the values: %+v", doc)
				}
			})
		}
	}
}

// TestNetworkFailures: a server that cannot be reached is reported by what
// failed, never as the Go SDK's "-32005 rejected by transport", with exit
// status 3, by every command that talks to a server.
func TestNetworkFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	tlsServer := httptest.NewTLSServer(endpoint.NewHandler(hostileServer(), nil))
	t.Cleanup(tlsServer.Close)
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0)
	plain := httptest.NewServer(endpoint.NewHandler(hostileServer(), nil))
	t.Cleanup(plain.Close)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(locked.Close)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })

	for _, tc := range []struct {
		url  string
		want []string
	}{
		{refused, []string{"connection refused"}},
		{"http://preflight-test.invalid/mcp", []string{"no such host preflight-test.invalid", "looking up preflight-test.invalid"}},
		{tlsServer.URL + endpoint.Path, []string{"TLS handshake failed: the server's certificate is not trusted: x509:"}},
		{strings.Replace(plain.URL, "http://", "https://", 1) + endpoint.Path, []string{"TLS handshake failed: the server does not speak TLS"}},
		{locked.URL + endpoint.Path, []string{"the server answered HTTP 401 Unauthorized (send credentials with -header"}},
		{slow.URL + endpoint.Path, []string{"timed out after 1s (-timeout)"}},
	} {
		timeout := "60s"
		if tc.url == slow.URL+endpoint.Path {
			timeout = "1s"
		}
		for _, cmd := range [][]string{{"inspect", "list"}, {"lint"}, {"docs"}, {"tokens"}} {
			code, out, errOut := runMain(t, append(cmd, "-timeout", timeout, "-url", tc.url)...)
			ok := false
			for _, w := range tc.want {
				ok = ok || strings.Contains(errOut, w)
			}
			if code != exitCouldNotRun || out != "" || !ok || strings.Contains(errOut, "32005") || strings.Contains(errOut, "rejected by transport") {
				t.Errorf("%s %s: exit %d, stdout %q, stderr:\n%s\nwant exit 3 and one of %q", cmd, tc.url, code, out, errOut, tc.want)
			}
		}
	}
}

// TestTimeoutBoundsTheRun: -timeout bounds everything after the command
// starts: a stdio server that never answers the handshake, one that
// never answers a call, and a question nobody answers.
func TestTimeoutBoundsTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	silent := filepath.Join(dir, "silent.sh")
	writeFile(t, silent, "#!/bin/sh\nexec sleep 600\n")
	if err := os.Chmod(silent, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect", "-timeout", "1s", "--", silent},
		{"lint", "-timeout", "1s", "--", silent},
		{"docs", "-timeout", "1s", "--", silent},
		{"tokens", "-timeout", "1s", "--", silent},
	} {
		code, _, errOut := runMain(t, args...)
		if code != exitCouldNotRun || !strings.Contains(errOut, "timed out after 1s (-timeout)") {
			t.Errorf("%s: exit %d, stderr:\n%s", args, code, errOut)
		}
	}
	// A question asked and never answered: standard input that never
	// ends.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"inspect", "-timeout", "2s", "call", "ask", "--"}, hostileCommand(t)...), r, &out, &errOut)
	if code != exitCouldNotRun || !strings.Contains(errOut.String(), "The server asks:") || !strings.Contains(errOut.String(), "timed out after 2s (-timeout)") {
		t.Errorf("unanswered question: exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
}

// TestServerExits: a server that exits in the middle of a call is a
// connection that failed (exit 3), said in words.
func TestServerExits(t *testing.T) {
	t.Parallel()
	code, out, errOut := runMain(t, append([]string{"inspect", "call", "die", "--"}, hostileCommand(t)...)...)
	if code != exitCouldNotRun || !strings.Contains(errOut, "preflight inspect: the connection to the server closed") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
