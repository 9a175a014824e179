package foldertool_test

//lint:file-ignore SA1019 describe_folder demonstrates sampling, deprecated by protocol 2026-07-28 (SEP-2577); its tests answer it.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
