//go:build integration

package interop

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
)

// The real TypeScript SDK v2 client against examples/folders: delete_folder
// asks the user to confirm before it deletes a folder with content, and the
// client answers from its elicitation handler, through input_required rounds
// on 2026-07-28 and as a real server-to-client request within the call on a
// legacy connection, over HTTP and stdio. In manual mode the client sees the
// raw input_required result and answers it with a retry.

const (
	deleteTool = "delete_folder"
	// fullQuestion is how the question about "full" (a.txt and sub/)
	// starts.
	fullQuestion = "Delete full and the 2 entries in it"
)

var (
	fullArgs  = map[string]any{"path": "full"}
	emptyArgs = map[string]any{"path": "empty"}
)

// deleteOutcomes are the four answers to delete_folder's question.
var deleteOutcomes = []struct {
	name    string
	answer  map[string]any
	want    string
	deleted bool
}{
	{"accept_true", Accept(map[string]any{"delete": true}), "deleted: full", true},
	{"accept_false", Accept(map[string]any{"delete": false}), "kept: you chose not to delete full", false},
	{"decline", Decline(), "declined: full was not deleted", false},
	{"cancel", Cancel(), "cancelled: full was not deleted", false},
}

// foldersTree makes a root with an empty folder and a full one (a.txt and
// the folder sub).
func foldersTree(t *testing.T) string {
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
	return dir
}

// foldersHTTP serves examples/folders on a fresh tree, both eras on one
// URL, until the test ends, then checks that no goroutine outlived it.
func foldersHTTP(t *testing.T) (Transport, string) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	dir := foldersTree(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	hs := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, nil), nil))
	t.Cleanup(hs.Close)
	return Transport{HTTP: hs.URL}, dir
}

// buildFolders builds ./examples/folders once per test.
func buildFolders(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "folders")
	build := exec.Command("go", "build", "-o", bin, "../examples/folders")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/folders: %v\n%s", err, out)
	}
	return bin
}

// foldersStdio is the built server on a fresh tree, spawned by the client.
func foldersStdio(t *testing.T, bin string) (Transport, string) {
	t.Helper()
	dir := foldersTree(t)
	return Transport{Stdio: &Stdio{Command: bin, Args: []string{"-root", dir}}}, dir
}

func folderExists(dir, p string) bool {
	_, err := os.Stat(filepath.Join(dir, p))
	return err == nil
}

// stepText is the text of the first content block of step i's result.
func stepText(t *testing.T, rep Report, i int) string {
	t.Helper()
	r := rep.Results[i]
	if !r.OK {
		t.Fatalf("step %d (%s) failed: %v", i, r.Op, r.Error)
	}
	c, _ := r.Map()["content"].([]any)
	if len(c) == 0 {
		t.Fatalf("step %d (%s): no content in %s", i, r.Op, r.Result)
	}
	text, _ := c[0].(map[string]any)["text"].(string)
	return text
}

// checkForm asserts that params are delete_folder's question about "full":
// a form whose schema has the one boolean property "delete".
func checkForm(t *testing.T, params map[string]any) {
	t.Helper()
	if msg, _ := params["message"].(string); !strings.HasPrefix(msg, fullQuestion) {
		t.Errorf("question %q, want it to start with %q", msg, fullQuestion)
	}
	schema, _ := params["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	field, _ := props["delete"].(map[string]any)
	if len(props) != 1 || field["type"] != "boolean" {
		t.Errorf("requestedSchema is not one boolean \"delete\": %v", schema)
	}
}

// serverRequests are the server-to-client requests among a step's wire
// messages.
func serverRequests(r StepResult) []map[string]any {
	var reqs []map[string]any
	for _, msg := range r.Wire {
		if _, ok := msg["method"]; ok && msg["id"] != nil {
			reqs = append(reqs, msg)
		}
	}
	return reqs
}

// wireResultTypes are the resultType of each response among a step's wire
// messages ("" for a response without one).
func wireResultTypes(r StepResult) []string {
	var types []string
	for _, msg := range r.Wire {
		if res, ok := msg["result"].(map[string]any); ok {
			rt, _ := res["resultType"].(string)
			types = append(types, rt)
		}
	}
	return types
}

// checkAskedOnce asserts that the elicitation handler saw exactly one
// question, delete_folder's about "full", during step 0, and that it came
// the way the era carries questions.
func checkAskedOnce(t *testing.T, rep Report, era string) {
	t.Helper()
	if len(rep.Asked) != 1 {
		t.Fatalf("the handler saw %d questions, want 1: %+v", len(rep.Asked), rep.Asked)
	}
	q := rep.Asked[0]
	if q.Method != "elicitation/create" || q.Step != 0 {
		t.Errorf("question: method %q during step %d, want elicitation/create during step 0", q.Method, q.Step)
	}
	checkForm(t, q.Params)
	call := rep.Results[0]
	switch era {
	case EraModern:
		// An input_required round: the SDK gives the handler the
		// inputRequests key as the id, and the server sent no request.
		if q.ID != "confirm_delete" {
			t.Errorf("2026-07-28: handler got id %v, want the input key confirm_delete", q.ID)
		}
		if reqs := serverRequests(call); len(reqs) != 0 {
			t.Errorf("2026-07-28: server-to-client requests on the wire: %v", reqs)
		}
		if got := wireResultTypes(call); len(got) != 2 || got[0] != "input_required" || got[1] != "complete" {
			t.Errorf("2026-07-28: responses with resultType %q, want one input_required round then complete", got)
		}
	default:
		// A real request within the call, with the server's own id.
		if _, ok := q.ID.(float64); !ok {
			t.Errorf("legacy: handler got id %#v, want the server's numeric request id", q.ID)
		}
		reqs := serverRequests(call)
		if len(reqs) != 1 || reqs[0]["method"] != "elicitation/create" {
			t.Fatalf("legacy: server-to-client requests %v, want one elicitation/create", reqs)
		}
		if got := wireResultTypes(call); len(got) != 1 {
			t.Errorf("legacy: %d responses to the call, want 1", len(got))
		}
	}
}

// deletePlan calls delete_folder on "full" with the handler answering
// answer.
func deletePlan(tr Transport, era string, answer map[string]any) Plan {
	return Plan{
		Transport: tr,
		Era:       era,
		Wire:      true,
		Elicit:    []map[string]any{answer},
		Steps:     []Step{Call(deleteTool, fullArgs)},
	}
}

func checkDelete(t *testing.T, rep Report, era, wantVersion, want string, deleted bool, dir string) {
	t.Helper()
	if rep.ProtocolVersion != wantVersion {
		t.Errorf("negotiated %q, want %q", rep.ProtocolVersion, wantVersion)
	}
	if got := stepText(t, rep, 0); got != want {
		t.Errorf("delete_folder returned %q, want %q", got, want)
	}
	if rep.Results[0].Map()["isError"] == true {
		t.Errorf("delete_folder returned a tool error: %s", rep.Results[0].Result)
	}
	checkAskedOnce(t, rep, era)
	if folderExists(dir, "full") == deleted {
		t.Errorf("full exists = %v after the call, want %v", folderExists(dir, "full"), !deleted)
	}
}

// TestFoldersDeleteHTTP: the four outcomes of delete_folder's question,
// answered by the TypeScript client's elicitation handler, in both eras.
func TestFoldersDeleteHTTP(t *testing.T) {
	for _, era := range filesEras {
		for _, o := range deleteOutcomes {
			t.Run(era.name+"/"+o.name, func(t *testing.T) {
				tr, dir := foldersHTTP(t)
				rep := RunTS(t, deletePlan(tr, era.plan, o.answer))
				checkDelete(t, rep, era.plan, era.version, o.want, o.deleted, dir)
			})
		}
	}
}

// TestFoldersDeleteStdio: the same over stdio, against the built example.
func TestFoldersDeleteStdio(t *testing.T) {
	bin := buildFolders(t)
	for _, era := range filesEras {
		for _, o := range deleteOutcomes {
			t.Run(era.name+"/"+o.name, func(t *testing.T) {
				tr, dir := foldersStdio(t, bin)
				rep := RunTS(t, deletePlan(tr, era.plan, o.answer))
				checkDelete(t, rep, era.plan, era.version, o.want, o.deleted, dir)
			})
		}
	}
}

// TestFoldersEmptyAsksNothing: an empty folder is deleted at once, with no
// question (the handler, declared, has no answer to give) and, on
// 2026-07-28, no input_required round.
func TestFoldersEmptyAsksNothing(t *testing.T) {
	check := func(t *testing.T, tr Transport, dir string, era struct{ name, plan, version string }) {
		rep := RunTS(t, Plan{
			Transport: tr,
			Era:       era.plan,
			Wire:      true,
			Elicit:    []map[string]any{},
			Steps:     []Step{Call(deleteTool, emptyArgs)},
		})
		if rep.ProtocolVersion != era.version {
			t.Errorf("negotiated %q, want %q", rep.ProtocolVersion, era.version)
		}
		if got := stepText(t, rep, 0); got != "deleted: empty" {
			t.Errorf("delete_folder returned %q", got)
		}
		if len(rep.Asked) != 0 {
			t.Errorf("the handler was asked: %+v", rep.Asked)
		}
		if reqs := serverRequests(rep.Results[0]); len(reqs) != 0 {
			t.Errorf("server-to-client requests: %v", reqs)
		}
		if got := wireResultTypes(rep.Results[0]); len(got) != 1 || got[0] == "input_required" {
			t.Errorf("responses with resultType %q, want one", got)
		}
		if folderExists(dir, "empty") {
			t.Error("empty still exists")
		}
		if !folderExists(dir, "full") {
			t.Error("full is gone")
		}
	}
	bin := buildFolders(t)
	for _, era := range filesEras {
		t.Run("http/"+era.name, func(t *testing.T) {
			tr, dir := foldersHTTP(t)
			check(t, tr, dir, era)
		})
		t.Run("stdio/"+era.name, func(t *testing.T) {
			tr, dir := foldersStdio(t, bin)
			check(t, tr, dir, era)
		})
	}
}

// checkRawInputRequired asserts that r's result is the raw input_required
// result of delete_folder on "full" and returns its requestState.
func checkRawInputRequired(t *testing.T, r StepResult) string {
	t.Helper()
	if !r.OK {
		t.Fatalf("manual call failed: %v", r.Error)
	}
	res := r.Map()
	if res["resultType"] != "input_required" {
		t.Fatalf("manual call: resultType %v, want input_required: %s", res["resultType"], r.Result)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("inputRequests %v, want one", reqs)
	}
	q, ok := reqs["confirm_delete"].(map[string]any)
	if !ok {
		t.Fatalf("inputRequests %v, want the key confirm_delete", reqs)
	}
	if q["method"] != "elicitation/create" {
		t.Errorf("input request method %v", q["method"])
	}
	params, _ := q["params"].(map[string]any)
	checkForm(t, params)
	state, _ := res["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState in %s", r.Result)
	}
	// The SDK hands the state back byte for byte.
	if wire := r.WireResult(); wire != nil && wire["requestState"] != state {
		t.Errorf("requestState differs from the wire's")
	}
	return state
}

// TestFoldersManual: in manual mode (2026-07-28) the client sees the raw
// input_required result; a retry with the answer and the echoed state
// completes the call, over HTTP and stdio.
func TestFoldersManual(t *testing.T) {
	plan := func(tr Transport) Plan {
		return Plan{
			Transport: tr,
			Era:       EraModern,
			Wire:      true,
			Manual:    true,
			// Declared without a handler: a manual client answers
			// by itself.
			Capabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
			Steps: []Step{
				Call(deleteTool, fullArgs),
				Retry(map[string]any{"confirm_delete": Accept(map[string]any{"delete": true})}),
			},
		}
	}
	check := func(t *testing.T, rep Report, dir string) {
		checkRawInputRequired(t, rep.Results[0])
		if got := stepText(t, rep, 1); got != "deleted: full" {
			t.Errorf("retry returned %q", got)
		}
		if got := wireResultTypes(rep.Results[1]); len(got) != 1 || got[0] != "complete" {
			t.Errorf("retry: responses with resultType %q, want one complete", got)
		}
		if len(rep.Asked) != 0 {
			t.Errorf("asked in manual mode: %+v", rep.Asked)
		}
		if folderExists(dir, "full") {
			t.Error("full still exists")
		}
	}
	t.Run("http", func(t *testing.T) {
		tr, dir := foldersHTTP(t)
		check(t, RunTS(t, plan(tr)), dir)
	})
	t.Run("stdio", func(t *testing.T) {
		tr, dir := foldersStdio(t, buildFolders(t))
		check(t, RunTS(t, plan(tr)), dir)
	})
	// 2026-07-28 is stateless: one client process gets the question,
	// nothing is deleted, another answers it with the state.
	t.Run("http/two_clients", func(t *testing.T) {
		tr, dir := foldersHTTP(t)
		p := plan(tr)
		p.Steps = p.Steps[:1]
		state := checkRawInputRequired(t, RunTS(t, p).Results[0])
		if !folderExists(dir, "full") {
			t.Fatal("full is gone before the answer")
		}
		p.Steps = []Step{Request("tools/call", map[string]any{
			"name":           deleteTool,
			"arguments":      fullArgs,
			"inputResponses": map[string]any{"confirm_delete": Decline()},
			"requestState":   state,
		})}
		if got := stepText(t, RunTS(t, p), 0); got != "declined: full was not deleted" {
			t.Errorf("second client got %q", got)
		}
		if !folderExists(dir, "full") {
			t.Error("full is gone after a decline")
		}
	})
}

// TestFoldersAutoFulfillOff: with auto-fulfilment off, a call that does
// not allow input_required fails with the SDK's typed error and deletes
// nothing; one that allows it gets the raw result.
func TestFoldersAutoFulfillOff(t *testing.T) {
	tr, dir := foldersHTTP(t)
	off := false
	rep := RunTS(t, Plan{
		Transport:   tr,
		Era:         EraModern,
		AutoFulfill: &off,
		Elicit:      []map[string]any{Accept(map[string]any{"delete": true})},
		Steps: []Step{
			Call(deleteTool, fullArgs),
			{Op: "call", Name: deleteTool, Arguments: fullArgs, AllowInputRequired: true},
		},
	})
	r := rep.Results[0]
	if r.OK || r.Error.SDKCode != "UNSUPPORTED_RESULT_TYPE" {
		t.Errorf("call without allowInputRequired: %+v, want SDK error UNSUPPORTED_RESULT_TYPE", r)
	} else if data, _ := r.Error.Data.(map[string]any); data["resultType"] != "input_required" {
		t.Errorf("error data %v, want resultType input_required", r.Error.Data)
	}
	checkRawInputRequired(t, rep.Results[1])
	if len(rep.Asked) != 0 {
		t.Errorf("the handler was asked with auto-fulfilment off: %+v", rep.Asked)
	}
	if !folderExists(dir, "full") {
		t.Error("full is gone")
	}
}

// TestFoldersDescribeSamples: describe_folder asks the client's model,
// answered by the TypeScript client's sampling handler, in both eras.
func TestFoldersDescribeSamples(t *testing.T) {
	const summary = "A folder with one file and one subfolder."
	for _, era := range filesEras {
		t.Run(era.name, func(t *testing.T) {
			tr, _ := foldersHTTP(t)
			rep := RunTS(t, Plan{
				Transport: tr,
				Era:       era.plan,
				Sample: []map[string]any{{
					"role": "assistant", "model": "scripted",
					"content": map[string]any{"type": "text", "text": summary},
				}},
				Steps: []Step{Call("describe_folder", fullArgs)},
			})
			if got := stepText(t, rep, 0); got != summary {
				t.Errorf("describe_folder returned %q", got)
			}
			if len(rep.Asked) != 1 || rep.Asked[0].Method != "sampling/createMessage" {
				t.Fatalf("asked %+v, want one sampling/createMessage", rep.Asked)
			}
			msgs, _ := rep.Asked[0].Params["messages"].([]any)
			var prompt any
			if len(msgs) == 1 {
				content, _ := msgs[0].(map[string]any)["content"].(map[string]any)
				prompt = content["text"]
			}
			if prompt != "Describe the folder full, which holds: a.txt, sub/" {
				t.Errorf("the model was asked %v", msgs)
			}
		})
	}
}
