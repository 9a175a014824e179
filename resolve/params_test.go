package resolve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

// maxErrorReply bounds the whole JSON-RPC reply to a request whose params
// are megabytes of the wrong thing.
const maxErrorReply = 1 << 10

// bigBadParams are tools/resolve params wrong in one field, each with
// what the answer must say: the first several megabytes (the size of
// request that got a 15 MB error once), the others 64 KiB, which is
// already far beyond any error worth sending. metaFree marks params
// without a _meta member, to which a 2026-07-28 peer adds its own.
func bigBadParams() []struct {
	name, params, says string
	metaFree           bool
} {
	// Quotes, which an echo escapes twice, in the small ones.
	huge, s := `"`+strings.Repeat("x", 3<<20)+`"`, `"`+strings.Repeat(`x\"`, 16<<10)+`"`
	return []struct {
		name, params, says string
		metaFree           bool
	}{
		{"name a 3 MiB object", `{"name":{"x":` + huge + `},"arguments":{}}`, "params.name must be a string", true},
		{"name an array", `{"name":[` + s + `],"arguments":{}}`, "params.name must be a string", true},
		{"arguments a string", `{"name":"manage_files","arguments":` + s + `}`, "params.arguments must be an object", true},
		{"arguments an array", `{"name":"manage_files","arguments":[` + s + `]}`, "params.arguments must be an object", true},
		{"_meta a string", `{"name":"manage_files","arguments":{},"_meta":` + s + `}`, "params._meta must be an object", false},
		{"params an array", `[` + s + `]`, "params must be an object", false},
		{"an unknown tool with a long name", `{"name":` + s + `,"arguments":{}}`, "is unknown or not resolvable", true},
		{"an argument value far outside its enum", `{"name":"manage_files","arguments":{"path":"a","action":` + s + `}}`, "/properties/action", true},
	}
}

// withRequestMeta adds the 2026-07-28 request _meta to JSON object params.
func withRequestMeta(params string, caps map[string]any) string {
	meta, _ := json.Marshal(map[string]any{
		"io.modelcontextprotocol/protocolVersion":    preflight.ProtocolStateless,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "wiretest", "version": "0"},
	})
	return strings.TrimSuffix(params, "}") + `,"_meta":` + string(meta) + "}"
}

func resolveBody(id int, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/resolve","params":%s}`, id, params)
}

// checkBoundedError checks the reply to one of bigBadParams: -32602,
// a message that says what is wrong, and a small reply.
func checkBoundedError(t *testing.T, raw []byte, says string) {
	t.Helper()
	var r wiretest.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("reply of %d bytes does not decode: %v", len(raw), err)
	}
	if len(raw) >= maxErrorReply {
		t.Errorf("reply of %d bytes (want < %d): %.300s…", len(raw), maxErrorReply, raw)
	}
	if r.Error == nil {
		t.Fatalf("want -32602, got %.300s", raw)
	}
	if r.Error.Code != preflight.CodeInvalidParams || !strings.Contains(r.Error.Message, says) {
		t.Errorf("error %d %.300q, want -32602 saying %q", r.Error.Code, r.Error.Message, says)
	}
}

// TestBigBadParamsHTTP: params of megabytes that fail to decode, or name
// an unknown tool or a value outside the schema, get a short -32602 naming
// the field, in both eras over HTTP; the server goes on serving.
func TestBigBadParamsHTTP(t *testing.T) {
	f := newFixture(t)
	defer f.close()
	valid := map[string]any{"name": filetool.Name, "arguments": map[string]any{"path": "a", "action": "read"}}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			p := era.peer(f.URL, nil)
			defer p.Close()
			stateless := era.name == preflight.ProtocolStateless
			if !stateless {
				p.Initialize(t)
			}
			for i, c := range bigBadParams() {
				if stateless && !c.metaFree {
					continue // its version and capabilities travel in _meta
				}
				t.Run(c.name, func(t *testing.T) {
					params := c.params
					if stateless {
						params = withRequestMeta(params, map[string]any{})
					}
					status, r := p.PostRaw(t, []byte(resolveBody(100+i, params)))
					if r == nil {
						t.Fatalf("HTTP %d with no JSON-RPC reply", status)
					}
					checkBoundedError(t, r.Raw, c.says)
					if r := p.Call(t, "tools/resolve", valid); r.Error != nil {
						t.Errorf("a valid request afterwards: %+v", r.Error)
					}
				})
			}
		})
	}
}

// stdioServerEnv makes the test binary serve manage_files over its stdin
// and stdout with endpoint.ServeStdio, instead of running tests.
const stdioServerEnv = "PREFLIGHT_RESOLVE_TEST_STDIO_SERVER"

// serveStdio is the test binary as a stdio server (see stdioServerEnv).
func serveStdio() int {
	dir, err := os.MkdirTemp("", "resolve-stdio")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer root.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio", Version: "v1"}, nil)
	filetool.Add(resolve.NewServer(s, nil), root)
	if err := endpoint.ServeStdio(context.Background(), s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stdioChild is the test binary serving stdio in a child process.
type stdioChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startStdioChild(t *testing.T) *stdioChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioServerEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &stdioChild{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close() // the server ends when its input does
		if err := cmd.Wait(); err != nil {
			t.Errorf("stdio server: %v", err)
		}
	})
	return c
}

// send writes one line and returns the next line of output.
func (c *stdioChild) send(t *testing.T, line string) []byte {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
	reply, err := c.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	return reply
}

// TestBigBadParamsStdio is TestBigBadParamsHTTP over endpoint.ServeStdio,
// in a child process, in both eras.
func TestBigBadParamsStdio(t *testing.T) {
	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		t.Run(era, func(t *testing.T) {
			c := startStdioChild(t)
			stateless := era == preflight.ProtocolStateless
			valid := `{"name":"manage_files","arguments":{"path":"a","action":"read"}}`
			if stateless {
				valid = withRequestMeta(valid, map[string]any{})
			} else {
				init := c.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				if !strings.Contains(string(init), `"protocolVersion":"2025-11-25"`) {
					t.Fatalf("initialize: %s", init)
				}
				if _, err := io.WriteString(c.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			for i, bad := range bigBadParams() {
				if stateless && !bad.metaFree {
					continue
				}
				t.Run(bad.name, func(t *testing.T) {
					params := bad.params
					if stateless {
						params = withRequestMeta(params, map[string]any{})
					}
					checkBoundedError(t, c.send(t, resolveBody(100+i, params)), bad.says)
					var r wiretest.Response
					if raw := c.send(t, resolveBody(200+i, valid)); json.Unmarshal(raw, &r) != nil || r.Result == nil {
						t.Errorf("a valid request afterwards: %.300s", raw)
					}
				})
			}
		})
	}
}
