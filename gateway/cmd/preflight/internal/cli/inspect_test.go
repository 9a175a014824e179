package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/inject"
)

// filesServer serves manage_files on a new directory holding a.txt over
// streamable HTTP (both eras), and returns the URL and the directory.
func filesServer(t *testing.T) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ts := httptest.NewServer(endpoint.NewHandler(filetool.NewServer(root, nil), nil))
	t.Cleanup(ts.Close)
	return ts.URL + endpoint.Path, dir
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

const (
	readArgs   = `{"path":"a.txt","action":"read"}`
	deleteArgs = `{"path":"a.txt","action":"delete"}`
)

func TestInspectList(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			code, out, errOut := runMain(t, "inspect", "-url", url, "-era", era)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			if !strings.Contains(out, "protocol "+era+", tool-resolution extension declared") {
				t.Errorf("server line missing:\n%s", out)
			}
			row := tableRows(t, out, "NAME")[filetool.Name]
			want := map[string]string{
				"ANNOTATIONS": "-- d - --",
				"HINTS":       "effect=delete idempotent=false confirm=true",
				"CONFIRM?":    "yes",
				"RETRY?":      "no",
				"RESOLVABLE":  "yes",
			}
			for col, v := range want {
				if row[col] != v {
					t.Errorf("%s = %q, want %q", col, row[col], v)
				}
			}

			code, out, errOut = runMain(t, "inspect", "-url", url, "-era", era, "-json", "list")
			if code != exitOK {
				t.Fatalf("-json: exit %d, stderr:\n%s", code, errOut)
			}
			var doc struct {
				Server struct {
					ProtocolVersion string `json:"protocolVersion"`
					Extension       bool   `json:"toolResolutionExtension"`
				} `json:"server"`
				Tools []struct {
					Name       string                `json:"name"`
					Effective  preflight.Annotations `json:"effectiveAnnotations"`
					Hints      map[string]any        `json:"hints"`
					Resolvable *bool                 `json:"resolvable"`
				} `json:"tools"`
			}
			decodeJSON(t, out, &doc)
			if doc.Server.ProtocolVersion != era || !doc.Server.Extension {
				t.Errorf("server = %+v", doc.Server)
			}
			if len(doc.Tools) != 1 || doc.Tools[0].Resolvable == nil || !*doc.Tools[0].Resolvable ||
				!doc.Tools[0].Effective.DestructiveHint || doc.Tools[0].Hints[preflight.MetaEffect] != "delete" {
				t.Errorf("tools = %+v", doc.Tools)
			}
		})
	}
}

// TestInspectListReadOnly: a read-only tool is never destructive, even
// when destructiveHint is left to its default (true): describe_folder of
// examples/folders, read-only and nothing else, lists as "ro - - ow".
func TestInspectListReadOnly(t *testing.T) {
	t.Parallel()
	root, err := os.OpenRoot(foldersRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ts := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, nil), nil))
	t.Cleanup(ts.Close)
	code, out, errOut := runMain(t, "inspect", "-url", ts.URL+endpoint.Path, "list")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	rows := tableRows(t, out, "NAME")
	if got := rows["describe_folder"]["ANNOTATIONS"]; got != "ro - - ow" {
		t.Errorf("describe_folder: ANNOTATIONS %q, want \"ro - - ow\":\n%s", got, out)
	}
	if got := rows["delete_folder"]["ANNOTATIONS"]; got != "-- d i --" {
		t.Errorf("delete_folder: ANNOTATIONS %q, want \"-- d i --\"", got)
	}
}

func TestInspectListSeedShape(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	code, out, errOut := runMain(t, "inspect", "-url", url, "-shape", "seed")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if row := tableRows(t, out, "NAME")[filetool.Name]; row["RESOLVABLE"] != "?" {
		t.Errorf("RESOLVABLE = %q, want ? (the seed marker is invisible to the SDK)", row["RESOLVABLE"])
	}
}

// resolveDocOut is the part of the resolve operation's JSON the tests read.
type resolveDocOut struct {
	Server struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"server"`
	Result   *preflight.ResolveResult `json:"result"`
	Error    *rpcError                `json:"error"`
	Decision *struct {
		Resolved          bool   `json:"resolved"`
		Shape             string `json:"shape"`
		NeedsConfirmation bool   `json:"needsConfirmation"`
		SafeToRetry       bool   `json:"safeToRetry"`
		Effective         struct {
			ReadOnly struct {
				Value  bool   `json:"value"`
				Source string `json:"source"`
			} `json:"readOnlyHint"`
			Effect struct {
				Value  string `json:"value"`
				Source string `json:"source"`
			} `json:"effect"`
		} `json:"effective"`
	} `json:"decision"`
}

func TestInspectResolve(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	for _, era := range eras {
		for _, shape := range []string{shapeExtension, shapeSeed} {
			for _, action := range []string{"read", "delete"} {
				t.Run(era+"/"+shape+"/"+action, func(t *testing.T) {
					args := `{"path":"a.txt","action":"` + action + `"}`
					code, out, errOut := runMain(t, "inspect", "-url", url, "-era", era, "-shape", shape, "-json", "resolve", filetool.Name, args)
					if code != exitOK {
						t.Fatalf("exit %d, stderr:\n%s\n%s", code, errOut, out)
					}
					var doc resolveDocOut
					decodeJSON(t, out, &doc)
					if doc.Server.ProtocolVersion != era {
						t.Errorf("protocol %q, want %q", doc.Server.ProtocolVersion, era)
					}
					r := doc.Result
					if r == nil {
						t.Fatalf("no result:\n%s", out)
					}
					var ann preflight.Annotations
					switch shape {
					case shapeExtension:
						if r.SeedShape() || r.ResultType != "complete" || r.Name != filetool.Name || r.Annotations == nil {
							t.Fatalf("result is not in the extension shape:\n%s", out)
						}
						ann = *r.Annotations
					case shapeSeed:
						if !r.SeedShape() || r.Tool.Tool == nil || r.Tool.Name != filetool.Name || r.Tool.InputSchema == nil {
							t.Fatalf("result is not in the seed shape:\n%s", out)
						}
						ann = preflight.AnnotationsOf(r.Tool.Annotations)
					}
					isRead := action == "read"
					if ann.ReadOnlyHint != isRead || ann.DestructiveHint == isRead {
						t.Errorf("annotations %+v for %s", ann, action)
					}
					d := doc.Decision
					if d == nil || !d.Resolved || d.Shape != shape {
						t.Fatalf("decision %+v, want resolved in the %s shape", d, shape)
					}
					if d.NeedsConfirmation == isRead || d.Effective.ReadOnly.Value != isRead || d.Effective.ReadOnly.Source != "resolved" || d.Effective.Effect.Value != action {
						t.Errorf("decision %+v for %s", d, action)
					}
				})
			}
		}
	}
}

func TestInspectResolveText(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	code, out, errOut := runMain(t, "inspect", "-url", url, "resolve", filetool.Name, readArgs)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{`"resultType": "complete"`, "decision (resolved, extension shape):"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rows := tableRows(t, out, "NAME")
	for name, want := range map[string]string{
		"readOnlyHint":                 "true resolved false",
		"mcp.dev/effect":               "read resolved delete",
		"mcp.dev/requiresConfirmation": "false resolved true",
	} {
		r := rows[name]
		if got := r["EFFECTIVE"] + " " + r["SOURCE"] + " " + r["FROM TOOLS/LIST"]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestInspectCall(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			url, dir := filesServer(t)
			file := filepath.Join(dir, "a.txt")

			code, out, errOut := runMain(t, "inspect", "-url", url, "-era", era, "call", filetool.Name, readArgs)
			if code != exitOK || !strings.Contains(out, "result:\n  alpha\n") {
				t.Fatalf("read: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}

			// Delete needs confirmation: refused without -yes.
			code, out, errOut = runMain(t, "inspect", "-url", url, "-era", era, "call", filetool.Name, deleteArgs)
			if code != exitFailure || !strings.Contains(errOut, "refused:") || !strings.Contains(errOut, "-yes") {
				t.Fatalf("delete without -yes: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if !exists(t, file) {
				t.Fatal("delete without -yes deleted the file")
			}
			code, out, _ = runMain(t, "inspect", "-url", url, "-era", era, "-json", "call", filetool.Name, deleteArgs)
			var doc struct {
				Refused  string         `json:"refused"`
				Result   map[string]any `json:"result"`
				Decision struct {
					NeedsConfirmation bool `json:"needsConfirmation"`
				} `json:"decision"`
			}
			decodeJSON(t, out, &doc)
			if code != exitFailure || doc.Refused == "" || doc.Result != nil || !doc.Decision.NeedsConfirmation {
				t.Fatalf("delete -json without -yes: exit %d, output:\n%s", code, out)
			}

			code, out, errOut = runMain(t, "inspect", "-url", url, "-era", era, "-yes", "call", filetool.Name, deleteArgs)
			if code != exitOK || !strings.Contains(out, "confirmed with -yes") || !strings.Contains(out, "deleted: a.txt") {
				t.Fatalf("delete -yes: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if exists(t, file) {
				t.Fatal("delete -yes left the file")
			}

			// A tool error (reading the deleted file) is a failure.
			code, out, _ = runMain(t, "inspect", "-url", url, "-era", era, "call", filetool.Name, readArgs)
			if code != exitFailure || !strings.Contains(out, "tool error:\n  a.txt: no such file") {
				t.Fatalf("read of a deleted file: exit %d, stdout:\n%s", code, out)
			}
		})
	}
}

func TestInspectUnknownTool(t *testing.T) {
	t.Parallel()
	url, _ := filesServer(t)
	for _, op := range []string{"resolve", "call"} {
		code, out, errOut := runMain(t, "inspect", "-url", url, op, "no_such_tool", "{}")
		if code != exitFailure {
			t.Errorf("%s: exit %d, want 1", op, code)
		}
		for _, want := range []string{"tools/resolve: error -32602:", `"no_such_tool" is unknown or not resolvable`, "hint: fix the arguments or the tool name"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s\nstdout:\n%s", op, want, errOut, out)
			}
		}
		code, out, _ = runMain(t, "inspect", "-url", url, "-json", op, "no_such_tool", "{}")
		var doc struct{ Error *rpcError }
		decodeJSON(t, out, &doc)
		if code != exitFailure || doc.Error == nil || doc.Error.Code != preflight.CodeInvalidParams || doc.Error.Hint == "" {
			t.Errorf("%s -json: exit %d, output:\n%s", op, code, out)
		}
	}

	// Arguments outside the input schema: the field is named.
	code, _, errOut := runMain(t, "inspect", "-url", url, "resolve", filetool.Name, `{"path":"a.txt","action":"zap"}`)
	if code != exitFailure || !strings.Contains(errOut, "error -32602") || !strings.Contains(errOut, "action") {
		t.Errorf("bad action: exit %d, stderr:\n%s", code, errOut)
	}
}

// TestInspectNoResolve inspects a server without tools/resolve: -32601,
// and the static annotations apply.
func TestInspectNoResolve(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "look", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked"}}}, nil, nil
		})
	ts := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer ts.Close()

	code, out, errOut := runMain(t, "inspect", "-url", ts.URL, "resolve", "look")
	if code != exitFailure || !strings.Contains(errOut, "error -32601") || !strings.Contains(errOut, "static annotations from tools/list apply") {
		t.Fatalf("resolve: exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "decision (static: resolution failed") || tableRows(t, out, "NAME")["readOnlyHint"]["SOURCE"] != "static" {
		t.Errorf("resolve: no static decision:\n%s", out)
	}
	code, out, errOut = runMain(t, "inspect", "-url", ts.URL, "call", "look")
	if code != exitOK || !strings.Contains(out, "decision (static: not resolved)") || !strings.Contains(out, "looked") {
		t.Errorf("call: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestInspectUsageErrors(t *testing.T) {
	t.Parallel()
	url := "http://127.0.0.1:1/mcp" // never dialled: usage is checked first
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"resolve", "manage_files", `{"path":`, "-url", url}, "is not valid JSON"},
		{[]string{"call", "manage_files", `[1,2]`, "-url", url}, "is not a JSON object"},
		{[]string{"call", "manage_files", "{}", "extra", "-url", url}, `unexpected "extra" after call`},
		{[]string{"read", "-url", url}, "read needs a resource URI"},
		{[]string{"-decline", "-cancel", "-url", url}, "not both"},
		{[]string{"-answer", "[true]", "-url", url}, "want a JSON object"},
		{[]string{"resolve", "-url", url}, "resolve needs a tool name"},
		{[]string{"frob", "-url", url}, `unknown operation "frob"`},
		{[]string{"list", "extra", "-url", url}, `unexpected "extra" after list`},
		{[]string{"list"}, "no server"},
		{[]string{"-url", url, "list", "--", "server"}, "not both"},
		{[]string{"list", "--"}, "no command after --"},
		{[]string{"-shape", "odd", "-url", url}, `-shape "odd"`},
		{[]string{"-era", "2020-01-01", "-url", url}, `-era "2020-01-01"`},
		{[]string{"-header", "nocolon", "-url", url}, "want Name: value"},
		{[]string{"-header", "A: b", "--", "server"}, "-header applies to -url only"},
	} {
		code, out, errOut := runMain(t, append([]string{"inspect"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.HasSuffix(errOut, "\nRun 'preflight help inspect' for usage.\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q with a pointer to the help", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestInspectStdio builds the example server and inspects it over stdio.
func TestInspectStdio(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "files")
	dir := t.TempDir()
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	server := []string{"--", bin, "-root", dir}

	for _, era := range eras {
		code, out, errOut := runMain(t, append([]string{"inspect", "-era", era, "list"}, server...)...)
		if code != exitOK || tableRows(t, out, "NAME")[filetool.Name]["RESOLVABLE"] != "yes" {
			t.Fatalf("%s list: exit %d, stdout:\n%s\nstderr:\n%s", era, code, out, errOut)
		}
		code, out, errOut = runMain(t, append([]string{"inspect", "-era", era, "-shape", "seed", "-json", "resolve", filetool.Name, readArgs}, server...)...)
		var doc resolveDocOut
		decodeJSON(t, out, &doc)
		if code != exitOK || doc.Result == nil || !doc.Result.SeedShape() || doc.Decision == nil || doc.Decision.NeedsConfirmation || doc.Server.ProtocolVersion != era {
			t.Fatalf("%s resolve -shape seed: exit %d, stdout:\n%s\nstderr:\n%s", era, code, out, errOut)
		}
	}
	code, out, errOut := runMain(t, append([]string{"inspect", "call", filetool.Name, deleteArgs}, server...)...)
	if code != exitFailure || !strings.Contains(errOut, "refused:") || !exists(t, file) {
		t.Fatalf("call delete without -yes: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runMain(t, append([]string{"inspect", "-yes", "call", filetool.Name, deleteArgs}, server...)...)
	if code != exitOK || !strings.Contains(out, "deleted: a.txt") || exists(t, file) {
		t.Fatalf("call delete -yes: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestInspectDisclosed drives examples/files with progressive disclosure,
// over HTTP and stdio in both eras: a call before the description was read
// is refused with a hint that says how to read it, and "read URI call ..."
// in one run reads it (printing the full definition) and makes the call.
func TestInspectDisclosed(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "files")
	const uri = "resource:///tool_descriptions?tools=manage_files"
	for _, era := range eras {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				server := []string{"--", bin, "-root", dir, "-disclose"}
				if transport == "http" {
					root, err := os.OpenRoot(dir)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { root.Close() })
					s, _ := filetool.NewDisclosingServer(root, nil, nil)
					ts := httptest.NewServer(endpoint.NewHandler(s, nil))
					t.Cleanup(ts.Close)
					server = []string{"-url", ts.URL + endpoint.Path}
				}
				inspect := func(args ...string) (int, string, string) {
					return runMain(t, append(append([]string{"inspect", "-era", era}, args...), server...)...)
				}
				code, out, errOut := inspect("call", filetool.Name, readArgs)
				if code != exitFailure || !strings.Contains(out, "TOOL_DESCRIPTION_REQUIRED") ||
					!strings.Contains(out, "hint: the server discloses its tools progressively: read the tool's description first, in the same run: preflight inspect read '"+uri+"' call manage_files") {
					t.Errorf("call before read: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("read", uri, "call", filetool.Name, readArgs)
				if code != exitOK || !strings.Contains(out, "resources/read "+uri+": 1 contents") || !strings.Contains(out, `"usage_guidance": {`) ||
					!strings.Contains(out, "\nresult:\n  alpha\n") {
					t.Errorf("read then call: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("-json", "read", uri, "call", filetool.Name, readArgs)
				var docs []struct {
					Op     string `json:"op"`
					Result struct {
						Contents []struct{ Text string } `json:"contents"`
						Content  []struct{ Text string } `json:"content"`
					} `json:"result"`
				}
				decodeJSON(t, out, &docs)
				if code != exitOK || len(docs) != 2 || docs[0].Op != "read" || docs[1].Op != "call" ||
					len(docs[0].Result.Contents) != 1 || !strings.Contains(docs[0].Result.Contents[0].Text, `"examples"`) ||
					len(docs[1].Result.Content) != 1 || docs[1].Result.Content[0].Text != "alpha\n" {
					t.Errorf("-json read then call: exit %d\n%s%s", code, out, errOut)
				}
				// A read without a selection says how to make one.
				code, _, errOut = inspect("read", "resource:///tool_descriptions")
				if code != exitFailure || !strings.Contains(errOut, "hint: name the tools: read 'resource:///tool_descriptions?tools=TOOL'") {
					t.Errorf("read without tools: exit %d\n%s", code, errOut)
				}
			})
		}
	}
}

// foldersRoot makes a root holding folders full/ and full2/ (each with a
// file) and from/, and returns it.
func foldersRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"full", "full2", "from"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"full", "full2"} {
		if err := os.WriteFile(filepath.Join(dir, d, "x.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInspectQuestions drives examples/folders, whose tools ask before
// they act, over HTTP and stdio in both eras (input_required rounds under
// 2026-07-28, requests within the call on 2025-11-25 sessions): answers
// from -answer (one per question of a chain), -decline, and the terminal
// (typed, re-asked after a bad answer; the end of the input cancels).
func TestInspectQuestions(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "folders")
	for _, era := range eras {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				dir := foldersRoot(t)
				server := []string{"--", bin, "-root", dir}
				if transport == "http" {
					root, err := os.OpenRoot(dir)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { root.Close() })
					ts := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, &inject.Options{Audience: "folders"}), nil))
					t.Cleanup(ts.Close)
					server = []string{"-url", ts.URL + endpoint.Path}
				}
				inspect := func(input string, args ...string) (int, string, string) {
					return runMainInput(t, input, append(append([]string{"inspect", "-era", era, "-yes"}, args...), server...)...)
				}
				folder := func(name string) bool { return exists(t, filepath.Join(dir, name)) }

				code, out, errOut := inspect("", "-answer", `{"delete":false}`, "call", "delete_folder", `{"path":"full"}`)
				if code != exitOK || !strings.Contains(out, "question: Delete full and the 1 entries in it (x.txt)?\n  answer (-answer): accept {\"delete\":false}\n") ||
					!strings.Contains(out, "result:\n  kept: you chose not to delete full\n") || !folder("full") {
					t.Errorf("-answer false: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("", "-decline", "call", "delete_folder", `{"path":"full"}`)
				if code != exitOK || !strings.Contains(out, "answer (-decline): decline") || !strings.Contains(out, "declined: full was not deleted") || !folder("full") {
					t.Errorf("-decline: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("", "call", "delete_folder", `{"path":"full"}`)
				if code != exitOK || !strings.Contains(errOut, "The server asks: Delete full and the 1 entries in it (x.txt)?") ||
					!strings.Contains(out, "answer (terminal): cancel") || !strings.Contains(out, "cancelled: full was not deleted") || !folder("full") {
					t.Errorf("no input: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("maybe\nyes\n", "call", "delete_folder", `{"path":"full"}`)
				if code != exitOK || !strings.Contains(errOut, "delete (boolean, required): delete the folder and everything in it") ||
					!strings.Contains(errOut, "want yes or no") || !strings.Contains(out, "answer (terminal): accept {\"delete\":true}") ||
					!strings.Contains(out, "deleted: full") || folder("full") {
					t.Errorf("terminal yes: exit %d\n%s%s", code, out, errOut)
				}
				code, out, errOut = inspect("", "-json", "-answer", `{"delete":true}`, "call", "delete_folder", `{"path":"full2"}`)
				var doc struct {
					Questions []questionView `json:"questions"`
				}
				decodeJSON(t, out, &doc)
				if code != exitOK || len(doc.Questions) != 1 || doc.Questions[0].Action != "accept" || doc.Questions[0].By != "-answer" ||
					doc.Questions[0].Content["delete"] != true || folder("full2") {
					t.Errorf("-json -answer true: exit %d\n%s%s", code, out, errOut)
				}
				// A chain: the second question names the first answer.
				code, out, errOut = inspect("", "-answer", `{"name":"to"}`, "-answer", `{"rename":true}`, "call", "rename_folder", `{"path":"from"}`)
				if code != exitOK || !strings.Contains(out, "question: Rename from to to?") || folder("from") || !folder("to") {
					t.Errorf("rename chain: exit %d\n%s%s", code, out, errOut)
				}
			})
		}
	}
}
