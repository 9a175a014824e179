//go:build integration

package podmantest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// imageUser is the image's non-root user and group (release/internal/image).
const imageUser = "65532"

// TestServe runs preflight serve from the image as users run it: on the
// host network, with a read-only root filesystem, as the image's user,
// /data a volume and the config mounted read-only, in front of an HTTP
// upstream the test serves. A go-sdk client lists the tools, reads, and
// is asked to confirm the delete, which it declines: the upstream never
// sees the delete.
func TestServe(t *testing.T) {
	p := New(t)
	archive := Image(t)
	start := time.Now()
	img := p.Load(archive)
	t.Logf("podman load %s: %v", img, time.Since(start).Round(time.Millisecond))

	up := startNotes(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(config, []byte("servers:\n  notes:\n    url: "+up.url+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + freeport.Arg(t)
	start = time.Now()
	c := p.Start("preflight-serve", "--read-only", "--network", "host",
		"--volume", "preflight-data:/data", "--volume", config+":/etc/preflight/config.yaml:ro",
		img, "serve", "-http", addr, "-config", "/etc/preflight/config.yaml")
	if err := c.WaitHealthy(addr); err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	t.Logf("podman run to healthy: %v", time.Since(start).Round(time.Millisecond))
	pid, err := c.PID()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("non-root", func(t *testing.T) {
		uids, gids, err := IDs(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range slices.Concat(uids, gids) {
			if id != imageUser {
				t.Errorf("process %d runs as uids %v gids %v, want %s everywhere", pid, uids, gids, imageUser)
				break
			}
		}
	})

	t.Run("read-only", func(t *testing.T) {
		mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if err != nil {
			t.Fatal(err)
		}
		opts := mountOptions(string(mounts))
		if o, ok := opts["/"]; !ok || !slices.Contains(o, "ro") {
			t.Errorf("root filesystem mounted %v, want ro", o)
		}
		for _, m := range []string{"/data", "/etc/preflight/config.yaml"} {
			if _, ok := opts[m]; !ok {
				t.Errorf("nothing mounted at %s", m)
			}
		}
		if o := opts["/data"]; slices.Contains(o, "ro") {
			t.Errorf("/data mounted %v, want it writable", o)
		}
		if o := opts["/etc/preflight/config.yaml"]; !slices.Contains(o, "ro") {
			t.Errorf("the config mounted %v, want ro", o)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var asked []string
	var mu sync.Mutex
	client := mcp.NewClient(&mcp.Implementation{Name: "podmantest", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + gateway.MCPPath}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
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
	slices.Sort(names)
	if !slices.Equal(names, []string{"delete_note", "read_note"}) {
		t.Errorf("tools %v, want delete_note and read_note", names)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": "todo"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != noteText {
		t.Errorf("read_note: %+v, want %q", res, noteText)
	}
	if n := up.reads.Load(); n != 1 {
		t.Errorf("the upstream served %d reads, want 1", n)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"name": "todo"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("delete_note declined: %+v, want a tool error", res)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "delete_note") {
		t.Errorf("asked %q, want one confirmation of delete_note", asked)
	}
	mu.Unlock()
	if n := up.deletes.Load(); n != 0 {
		t.Errorf("the upstream ran %d deletes, want none", n)
	}
	if !c.Running() {
		t.Errorf("the container stopped\n%s", c.Logs())
	}
}

// mountOptions maps each mount point in a /proc/PID/mountinfo to its
// per-mount options; the last mount at a point wins.
func mountOptions(mountinfo string) map[string][]string {
	opts := map[string][]string{}
	for line := range strings.Lines(mountinfo) {
		f := strings.Fields(line)
		if len(f) > 5 {
			opts[f[4]] = strings.Split(f[5], ",")
		}
	}
	return opts
}

// noteText is what the upstream's read_note returns.
const noteText = "buy milk"

// notes is the upstream: an MCP server over streamable HTTP on loopback
// with a read tool and a delete tool, counting the calls it runs.
type notes struct {
	url            string
	reads, deletes atomic.Int64
}

type noteArgs struct {
	Name string `json:"name"`
}

func startNotes(t *testing.T) *notes {
	n := &notes{}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_note", Description: "Read a note.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, noteArgs) (*mcp.CallToolResult, any, error) {
			n.reads.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: noteText}}}, nil, nil
		})
	destructive := true
	mcp.AddTool(s, &mcp.Tool{Name: "delete_note", Description: "Delete a note.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(context.Context, *mcp.CallToolRequest, noteArgs) (*mcp.CallToolResult, any, error) {
			n.deletes.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
	})
	n.url = "http://" + ln.Addr().String() + "/mcp"
	return n
}
