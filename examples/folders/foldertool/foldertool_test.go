package foldertool_test

//lint:file-ignore SA1019 describe_folder demonstrates sampling, deprecated by protocol 2026-07-28 (SEP-2577); its tests answer it.

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tree makes a root with an empty folder and a full one.
func tree(t *testing.T) (string, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"empty", "full/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	hs := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, nil), nil))
	t.Cleanup(hs.Close)
	return dir, hs
}

func exists(dir, p string) bool {
	_, err := os.Stat(filepath.Join(dir, p))
	return err == nil
}

var formCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}

func resultText(t *testing.T, r *wiretest.Response) string {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error: %+v", r.Error)
	}
	c := r.Result["content"].([]any)
	return c[0].(map[string]any)["text"].(string)
}

// TestDeleteFolderOutcomes: the four outcomes of the question, in both
// eras, on the wire.
func TestDeleteFolderOutcomes(t *testing.T) {
	outcomes := []struct {
		name    string
		answer  map[string]any
		want    string
		deleted bool
	}{
		{"accept true", map[string]any{"action": "accept", "content": map[string]any{"delete": true}}, "deleted: full", true},
		{"accept false", map[string]any{"action": "accept", "content": map[string]any{"delete": false}}, "kept: you chose not to delete full", false},
		{"decline", map[string]any{"action": "decline"}, "declined: full was not deleted", false},
		{"cancel", map[string]any{"action": "cancel"}, "cancelled: full was not deleted", false},
	}
	for _, o := range outcomes {
		t.Run("2026-07-28/"+o.name, func(t *testing.T) {
			dir, hs := tree(t)
			p := wiretest.Stateless(hs.URL, formCaps)
			args := map[string]any{"path": "full"}
			r1 := p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": args})
			if r1.Result["resultType"] != "input_required" || !exists(dir, "full") {
				t.Fatalf("round 1: %s", r1.Raw)
			}
			q := r1.Result["inputRequests"].(map[string]any)["confirm_delete"].(map[string]any)["params"].(map[string]any)
			if !strings.HasPrefix(q["message"].(string), "Delete full and the 2 entries in it") {
				t.Errorf("question: %v", q["message"])
			}
			props := q["requestedSchema"].(map[string]any)["properties"].(map[string]any)
			if field, _ := props["delete"].(map[string]any); len(props) != 1 || field["type"] != "boolean" {
				t.Errorf("the form is not one boolean: %v", props)
			}
			r2 := p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": args,
				"inputResponses": map[string]any{"confirm_delete": o.answer}, "requestState": r1.Result["requestState"]})
			if got := resultText(t, r2); got != o.want {
				t.Errorf("got %q, want %q", got, o.want)
			}
			if exists(dir, "full") == o.deleted {
				t.Errorf("full exists = %v after %s", exists(dir, "full"), o.name)
			}
		})
		t.Run("2025-11-25/"+o.name, func(t *testing.T) {
			dir, hs := tree(t)
			asked := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					var r mcp.ElicitResult
					b, _ := json.Marshal(o.answer)
					json.Unmarshal(b, &r)
					return &r, nil
				},
			})
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_folder", Arguments: map[string]any{"path": "full"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != o.want || asked != 1 {
				t.Errorf("got %q after %d questions, want %q after 1", got, asked, o.want)
			}
			if exists(dir, "full") == o.deleted {
				t.Errorf("full exists = %v after %s", exists(dir, "full"), o.name)
			}
		})
	}
}

// TestEmptyFolderAsksNothing: an empty folder goes at once, even for a
// client that cannot answer questions (no -32021: nothing is asked).
func TestEmptyFolderAsksNothing(t *testing.T) {
	dir, hs := tree(t)
	p := wiretest.Stateless(hs.URL, nil)
	r := p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": map[string]any{"path": "empty"}})
	if got := resultText(t, r); got != "deleted: empty" || exists(dir, "empty") {
		t.Errorf("got %q", got)
	}
	r = p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": map[string]any{"path": "full"}})
	if r.Error == nil || r.Error.Code != -32021 {
		t.Errorf("full folder, client without elicitation: %s", r.Raw)
	}
}

// TestResolveNeverAsks: delete_folder is resolvable; tools/resolve reads
// the folder and asks nothing.
func TestResolveNeverAsks(t *testing.T) {
	_, hs := tree(t)
	p := wiretest.Stateless(hs.URL, wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints))
	for path, confirm := range map[string]bool{"empty": false, "full": true} {
		r := p.Call(t, "tools/resolve", map[string]any{"name": "delete_folder", "arguments": map[string]any{"path": path}})
		if r.Error != nil {
			t.Fatalf("%s: %+v", path, r.Error)
		}
		h, _ := r.Result["_meta"].(map[string]any)[preflight.MetaPolicyHints].(map[string]any)
		if got := h["requiresConfirmation"]; got != confirm {
			t.Errorf("%s: requiresConfirmation = %v, want %v", path, got, confirm)
		}
		if got := r.Result["annotations"].(map[string]any)["destructiveHint"]; got != confirm {
			t.Errorf("%s: destructiveHint = %v, want %v", path, got, confirm)
		}
	}
}

// TestRenameChain: the second question names the first answer.
func TestRenameChain(t *testing.T) {
	dir, hs := tree(t)
	p := wiretest.Stateless(hs.URL, formCaps)
	call := func(responses map[string]any, state any) *wiretest.Response {
		params := map[string]any{"name": "rename_folder", "arguments": map[string]any{"path": "full"}}
		if state != nil {
			params["inputResponses"], params["requestState"] = responses, state
		}
		return p.Call(t, "tools/call", params)
	}
	r1 := call(nil, nil)
	if got := reflect.ValueOf(r1.Result["inputRequests"]).MapKeys(); len(got) != 1 {
		t.Fatalf("round 1 asks %v", got)
	}
	r2 := call(map[string]any{"new_name": map[string]any{"action": "accept", "content": map[string]any{"name": "archive"}}}, r1.Result["requestState"])
	q := r2.Result["inputRequests"].(map[string]any)["confirm_rename"].(map[string]any)["params"].(map[string]any)
	if q["message"] != "Rename full to archive?" {
		t.Fatalf("round 2 question: %v", q["message"])
	}
	r3 := call(map[string]any{"confirm_rename": map[string]any{"action": "accept", "content": map[string]any{"rename": true}}}, r2.Result["requestState"])
	if got := resultText(t, r3); got != "renamed: full -> archive" || !exists(dir, "archive/a.txt") {
		t.Errorf("got %q", got)
	}
}

// TestDescribeSamples: describe_folder asks the client's model, through
// the SDK client's sampling handler, in both eras.
func TestDescribeSamples(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			_, hs := tree(t)
			var prompt string
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					prompt = req.Params.Messages[0].Content.(*mcp.TextContent).Text
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "A folder with one file and one subfolder."}}, nil
				},
			})
			var opts *mcp.ClientSessionOptions
			if era != "2026-07-28" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: era}
			}
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_folder", Arguments: map[string]any{"path": "full"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "A folder with one file and one subfolder." || res.IsError {
				t.Errorf("got %q", got)
			}
			if prompt != "Describe the folder full, which holds: a.txt, sub/" {
				t.Errorf("the model was asked %q", prompt)
			}
		})
	}
	// A client without sampling: -32021 naming sampling.
	_, hs := tree(t)
	r := wiretest.Stateless(hs.URL, formCaps).Call(t, "tools/call", map[string]any{"name": "describe_folder", "arguments": map[string]any{"path": "full"}})
	if r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(r.Error.Data), `"sampling":{}`) {
		t.Errorf("no sampling capability: %s", r.Raw)
	}
}

// snapshot is every path under dir with its file content ("/" for a
// folder).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			m[rel] = "/"
			return nil
		}
		b, err := os.ReadFile(p)
		m[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rootPaths name the root itself, or leave it, however they are spelt.
func rootPaths(dir string) []string {
	return []string{"full/..", "full/../", "./full/..", "full/sub/../..", ".", "./", "", "..", "../x", "/", dir, filepath.Join(dir, "full")}
}

var (
	askCaps   = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}}
	rootTools = []string{"delete_folder", "rename_folder", "describe_folder"}
)

// TestRootIsNeverTouched: a path that names the root (x/.., ./x/..,
// x/y/../.., ., "") or leaves it (.., absolute) is refused by every tool
// with a tool error before any question is asked, and the root and its
// contents stay as they were. The legacy client here accepts every
// question: before paths were cleaned, delete_folder {"path":"full/.."}
// asked to delete the root's entries and, accepted, emptied the root.
func TestRootIsNeverTouched(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		dir, hs := tree(t)
		before := snapshot(t, dir)
		p := wiretest.Stateless(hs.URL, askCaps)
		for _, tool := range rootTools {
			for _, path := range rootPaths(dir) {
				r := p.Call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"path": path}})
				if r.Error != nil || r.Result["resultType"] == "input_required" || r.Result["isError"] != true {
					t.Errorf("%s %q: want a tool error and no question, got %s", tool, path, r.Raw)
				}
			}
		}
		if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
			t.Errorf("the root changed:\n before %v\n after  %v", before, after)
		}
	})
	t.Run("2025-11-25", func(t *testing.T) {
		dir, hs := tree(t)
		before := snapshot(t, dir)
		var asked atomic.Int32
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"delete": true, "name": "moved", "rename": true}}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				asked.Add(1)
				return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "a folder"}}, nil
			},
		})
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for _, tool := range rootTools {
			for _, path := range rootPaths(dir) {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": path}})
				if err != nil {
					t.Fatalf("%s %q: %v", tool, path, err)
				}
				if !res.IsError {
					t.Errorf("%s %q: want a tool error, got %q", tool, path, res.Content[0].(*mcp.TextContent).Text)
				}
				if n := asked.Swap(0); n != 0 {
					t.Errorf("%s %q: %d questions asked, want none", tool, path, n)
				}
			}
		}
		if after := snapshot(t, dir); !reflect.DeepEqual(after, before) {
			t.Errorf("the root changed:\n before %v\n after  %v", before, after)
		}
	})
}

// TestRefusalsSayWhy: the refusals name the path and what is wrong with
// it.
func TestRefusalsSayWhy(t *testing.T) {
	dir, hs := tree(t)
	p := wiretest.Stateless(hs.URL, askCaps)
	for path, want := range map[string]string{
		"full/..": `full/..: path is the root directory itself: give a folder inside it`,
		"":        `path is empty: give a folder path relative to the root directory`,
		"../x":    `../x: path is outside the root directory: give a path relative to it, without ".."`,
		dir:       dir + `: path is absolute: give a folder path relative to the root directory`,
		"nope":    `nope: no such folder`,
	} {
		for _, tool := range rootTools {
			r := p.Call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"path": path}})
			if got := resultText(t, r); !strings.HasSuffix(got, want) {
				t.Errorf("%s %q: %q, want it to end in %q", tool, path, got, want)
			}
		}
	}
}

// TestPathsAreCleaned: a path that cleans to a folder inside the root
// works on that folder, under its clean name.
func TestPathsAreCleaned(t *testing.T) {
	dir, hs := tree(t)
	p := wiretest.Stateless(hs.URL, nil)
	r := p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": map[string]any{"path": "./full/../empty/"}})
	if got := resultText(t, r); got != "deleted: empty" || exists(dir, "empty") || !exists(dir, "full/a.txt") {
		t.Errorf("got %q; empty exists %v, full/a.txt exists %v", got, exists(dir, "empty"), exists(dir, "full/a.txt"))
	}
}
