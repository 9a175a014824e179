//go:build integration

package gateway_test

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// npmServers installs the reference servers pinned in lint/testdata (npm
// ci, unless node_modules already matches the lock file) and returns a
// function that makes the upstream spec of one of them, run with node over
// stdio.
func npmServers(t *testing.T) func(name, pkg string, args ...string) gateway.UpstreamSpec {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "lint", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	npmdeps.EnsureT(t, dir)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (Node.js >= 20) is required: %v", err)
	}
	return func(name, pkg string, args ...string) gateway.UpstreamSpec {
		return gateway.UpstreamSpec{Name: name, Command: node, Args: append([]string{npmdeps.Bin(t, dir, pkg)}, args...), Dir: t.TempDir()}
	}
}

// TestReferenceServers puts the gateway in front of the npm reference
// servers (filesystem, memory, everything; 2025-11-25 servers over stdio)
// and drives them with clients of both eras: lists with prefixed names and
// the servers' own annotations, calls, progress notifications, and the
// everything server's elicitation and sampling requests, which reach a
// legacy client as requests and a 2026-07-28 client as input_required.
func TestReferenceServers(t *testing.T) {
	spec := npmServers(t)
	files := t.TempDir()
	memory := spec("memory", "server-memory")
	memory.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	specs := []gateway.UpstreamSpec{
		spec("filesystem", "server-filesystem", files),
		memory,
		spec("everything", "server-everything", "stdio"),
	}
	g, url := startGateway(t, &gateway.Options{Upstreams: specs})
	for _, h := range g.Health().Upstreams {
		if h.Era != legacy {
			t.Errorf("%s connected at %q, want %s", h.Name, h.Era, legacy)
		}
	}

	// The filesystem server's own annotations, from a direct connection.
	direct := map[string]*mcp.ToolAnnotations{}
	{
		c := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil)
		fs := spec("filesystem", "server-filesystem", files)
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(fs.Command, fs.Args...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			direct["filesystem__"+tool.Name] = tool.Annotations
		}
		cs.Close()
	}

	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			progress := make(chan float64, 10)
			var sampled atomic.Int32
			a := &answers{}
			cs := connect(t, url, era, nil, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					a.elicit(ctx, req)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada " + era}}, nil
				},
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled in " + era}}, nil
				},
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					if req.Params.ProgressToken == "tok-"+era {
						progress <- req.Params.Progress
					}
				},
			})
			ctx := context.Background()
			listed := map[string]*mcp.Tool{}
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				listed[tool.Name] = tool
			}
			for _, n := range []string{"filesystem__read_text_file", "filesystem__write_file", "memory__create_entities", "memory__read_graph",
				"everything__echo", "everything__trigger-long-running-operation", "everything__trigger-elicitation-request", "everything__trigger-sampling-request"} {
				if listed[n] == nil {
					t.Errorf("%s is not listed", n)
				}
			}
			for name, want := range direct {
				if got := listed[name]; got == nil || !reflect.DeepEqual(got.Annotations, want) {
					t.Errorf("%s annotations through the gateway differ from the server's own", name)
				}
			}

			call := func(name string, args map[string]any, meta mcp.Meta) string {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.IsError {
					t.Fatalf("%s: tool error %s", name, contentText(t, res))
				}
				return contentText(t, res)
			}
			path := filepath.Join(files, era+".txt")
			call("filesystem__write_file", map[string]any{"path": path, "content": "written through the gateway"}, nil)
			if got := call("filesystem__read_text_file", map[string]any{"path": path}, nil); got != "written through the gateway" {
				t.Errorf("read_text_file = %q", got)
			}
			call("memory__create_entities", map[string]any{"entities": []any{map[string]any{"name": "entity-" + era, "entityType": "test", "observations": []any{"seen"}}}}, nil)
			if got := call("memory__read_graph", map[string]any{}, nil); !strings.Contains(got, "entity-"+era) {
				t.Errorf("read_graph = %q", got)
			}
			if got := call("everything__echo", map[string]any{"message": "hi " + era}, nil); !strings.Contains(got, "hi "+era) {
				t.Errorf("echo = %q", got)
			}
			call("everything__trigger-long-running-operation", map[string]any{"duration": 0.1, "steps": 3}, mcp.Meta{"progressToken": "tok-" + era})
			// The SDK client may hand over a result before it runs the
			// handler of a notification that came before it: wait for
			// them, in order.
			for want := 1.0; want <= 3; want++ {
				select {
				case got := <-progress:
					if got != want {
						t.Errorf("progress %v, want %v", got, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("progress notification %v never came", want)
				}
			}
			if got := call("everything__trigger-elicitation-request", map[string]any{}, nil); !strings.Contains(got, "- Name: Ada "+era) {
				t.Errorf("elicitation result = %q", got)
			}
			if msgs := a.messages(); len(msgs) != 1 || msgs[0] != "Please provide inputs for the following fields:" {
				t.Errorf("questions = %q", msgs)
			}
			if got := call("everything__trigger-sampling-request", map[string]any{"prompt": "hello"}, nil); !strings.Contains(got, "sampled in "+era) || sampled.Load() != 1 {
				t.Errorf("sampling result = %q", got)
			}
		})
	}
}
