package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

// elicitCaps are a 2026-07-28 client's capabilities with form elicitation.
var elicitCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}

// filesGateway starts a gateway with decisions on in front of the
// manage_files example (a 2026-07-28 upstream over HTTP, so a
// 2026-07-28 client's first call takes the passthrough path) and returns
// the directory it manages and the gateway's URL.
func filesGateway(t *testing.T, d *stage.DecideOptions, logger *slog.Logger) (string, string) {
	t.Helper()
	root := filesDir(t)
	s := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	_, url := startGateway(t, &gateway.Options{Logger: logger, Decisions: d,
		Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: serveEra(t, s, modern)}}})
	return root.Name(), url
}

func toolCall(name string, args map[string]any, answer map[string]any, state string) map[string]any {
	p := map[string]any{"name": name, "arguments": args}
	if answer != nil {
		p["inputResponses"] = map[string]any{stage.ConfirmKey: answer}
	}
	if state != "" {
		p["requestState"] = state
	}
	return p
}

func accept() map[string]any {
	return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
}

// resultText is the text of a wire result's content.
func resultText(r *wiretest.Response) string {
	var b strings.Builder
	cs, _ := r.Result["content"].([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// confirmQuestion checks that r asks the gateway's confirmation and
// returns its requestState and message.
func confirmQuestion(t *testing.T, r *wiretest.Response) (state, message string) {
	t.Helper()
	if r.Error != nil || r.Result["resultType"] != "input_required" {
		t.Fatalf("want the gateway's confirmation, got %s", r.Raw)
	}
	asks, _ := r.Result["inputRequests"].(map[string]any)
	q, _ := asks[stage.ConfirmKey].(map[string]any)
	params, _ := q["params"].(map[string]any)
	if len(asks) != 1 || q["method"] != "elicitation/create" || params["mode"] != "form" {
		t.Fatalf("inputRequests = %s", wiretest.MustJSON(asks))
	}
	state, _ = r.Result["requestState"].(string)
	message, _ = params["message"].(string)
	return state, message
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestConfirmModernOnTheWire drives the in-band confirmation of a
// 2026-07-28 client on the wire: a delete is asked (the form names the
// server, the tool, the arguments and why), a declined or cancelled
// confirmation leaves the file in place, forged state and state for other
// arguments are refused, an accepted one runs the call once and the same
// state again is refused; a read is never asked; a client that declared no
// elicitation is told why the call did not run.
func TestConfirmModernOnTheWire(t *testing.T) {
	t.Parallel()
	dir, url := filesGateway(t, &stage.DecideOptions{}, nil)
	p := wiretest.Stateless(url, elicitCaps)
	notes := filepath.Join(dir, "notes.txt")
	del := map[string]any{"action": "delete", "path": "notes.txt"}

	r := p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "read", "path": "notes.txt"}, nil, ""))
	if r.Error != nil || r.Result["resultType"] != "complete" || !strings.Contains(resultText(r), "hello from the files upstream") {
		t.Fatalf("read: %s", r.Raw)
	}

	state, msg := confirmQuestion(t, p.Call(t, "tools/call", toolCall("manage_files", del, nil, "")))
	for _, want := range []string{"Server: files", "Tool: manage_files", "path: notes.txt", "action: delete", "Why you are asked: the call deletes (effect delete, from this call's resolution)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	for _, c := range []struct {
		name   string
		answer map[string]any
		want   string
	}{
		{"declined", map[string]any{"action": "decline"}, "declined"},
		{"cancelled", map[string]any{"action": "cancel"}, "cancelled"},
		{"accepted unchecked", map[string]any{"action": "accept", "content": map[string]any{"confirm": false}}, "declined"},
	} {
		r := p.Call(t, "tools/call", toolCall("manage_files", del, c.answer, state))
		if r.Error != nil || r.Result["isError"] != true || !strings.Contains(resultText(r), "was not run: the confirmation was "+c.want) ||
			!strings.Contains(resultText(r), "upstream was not contacted") {
			t.Errorf("%s: %s", c.name, r.Raw)
		}
		if !exists(t, notes) {
			t.Fatalf("%s: notes.txt is gone", c.name)
		}
	}

	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 1
	for name, r := range map[string]*wiretest.Response{
		"forged state":    p.Call(t, "tools/call", toolCall("manage_files", del, accept(), string(tampered))),
		"other arguments": p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "full/inner/x.txt"}, accept(), state)),
		"no answer":       p.Call(t, "tools/call", toolCall("manage_files", del, nil, state)),
	} {
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: %s", name, r.Raw)
		}
	}
	if !exists(t, notes) || !exists(t, filepath.Join(dir, "full", "inner", "x.txt")) {
		t.Fatal("a refused answer touched the upstream")
	}

	r = p.Call(t, "tools/call", toolCall("manage_files", del, accept(), state))
	if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["isError"] == true {
		t.Fatalf("accepted: %s", r.Raw)
	}
	if exists(t, notes) {
		t.Fatal("notes.txt still exists after the accepted call")
	}
	// The same approved state again is refused: the file, written anew,
	// stays.
	if err := os.WriteFile(notes, []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.Call(t, "tools/call", toolCall("manage_files", del, accept(), state)); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("replayed approval: %s", r.Raw)
	}
	if !exists(t, notes) {
		t.Fatal("the replayed approval ran the call again")
	}

	// A client that cannot be asked gets a tool error saying why.
	plain := wiretest.Stateless(url, nil)
	r = plain.Call(t, "tools/call", toolCall("manage_files", del, nil, ""))
	if r.Error != nil || r.Result["isError"] != true || !strings.Contains(resultText(r), "needs confirmation (the call deletes") ||
		!strings.Contains(resultText(r), "cannot be asked") {
		t.Errorf("client without elicitation: %s", r.Raw)
	}
	if !exists(t, notes) {
		t.Fatal("the unconfirmed call ran")
	}
}

// legacyAnswers answers the gateway's confirmation with action, counting
// the questions; "block" answers nothing until release is closed.
type legacyAnswers struct {
	mu      sync.Mutex
	action  string
	asked   []string
	release chan struct{}
}

func (a *legacyAnswers) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params.Message)
	action := a.action
	a.mu.Unlock()
	switch action {
	case "block":
		select {
		case <-ctx.Done():
		case <-a.release:
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	case "accept":
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	case "fail":
		return nil, errors.New("this client does not show forms")
	}
	return &mcp.ElicitResult{Action: action}, nil
}

func (a *legacyAnswers) set(action string) {
	a.mu.Lock()
	a.action = action
	a.mu.Unlock()
}

// TestConfirmLegacyMidCall asks a 2025-11-25 client within its call, in
// front of an upstream of either era (a legacy upstream over HTTP is where
// legacy calls may pass through without the SDK, which cannot ask): a
// decline and a cancel leave the file, an unanswered question ends the
// call when ConfirmWait passes, an accept runs it.
func TestConfirmLegacyMidCall(t *testing.T) {
	t.Parallel()
	for _, era := range []string{modern, legacy} {
		t.Run("upstream="+era, func(t *testing.T) { confirmLegacyMidCall(t, era) })
	}
}

func confirmLegacyMidCall(t *testing.T, upEra string) {
	root := filesDir(t)
	s := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	_, url := startGateway(t, &gateway.Options{Decisions: &stage.DecideOptions{}, ConfirmWait: 300 * time.Millisecond,
		Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: serveEra(t, s, upEra)}}})
	a := &legacyAnswers{release: make(chan struct{})}
	cs := connect(t, url, legacy, nil, &mcp.ClientOptions{ElicitationHandler: a.elicit})
	notes := filepath.Join(root.Name(), "notes.txt")
	ctx := context.Background()
	call := func() *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "manage_files", Arguments: map[string]any{"action": "delete", "path": "notes.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct{ action, want string }{
		{"decline", "the confirmation was declined"},
		{"cancel", "the confirmation was cancelled"},
		{"block", "it was not confirmed within 300ms"},
		// A client that fails the question is one that cannot be asked, not
		// one that let the time pass.
		{"fail", "this client cannot be asked for it"},
	} {
		a.set(c.action)
		res := call()
		if !res.IsError || !strings.Contains(contentText(t, res), c.want) || c.action != "fail" && !strings.Contains(contentText(t, res), "upstream was not contacted") {
			t.Errorf("%s: %s", c.action, contentText(t, res))
		}
		if !exists(t, notes) {
			t.Fatalf("%s: notes.txt is gone", c.action)
		}
	}
	close(a.release)
	a.set("accept")
	if res := call(); res.IsError {
		t.Fatalf("accepted: %s", contentText(t, res))
	}
	if exists(t, notes) {
		t.Error("notes.txt still exists after the accepted call")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) != 5 || !strings.Contains(a.asked[0], "Tool: manage_files") || !strings.Contains(a.asked[0], "path: notes.txt") {
		t.Errorf("questions: %q", a.asked)
	}
}

// syncBuffer is a log destination safe for concurrent writes; calls
// receives a value for each call record (the gateway logs a call after
// its answer is on the way, so a test waits for the record).
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	calls chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls != nil && bytes.Contains(p, []byte(`"msg":"call"`)) {
		s.calls <- struct{}{}
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDecisionRulesAndDryRun checks a deployer's rules on the wire: a
// rule over the arguments denies a call (with its reason) that the
// defaults would only confirm, another allows a delete without asking;
// and in dry-run nothing is asked or refused, while the log records what
// would have been decided.
func TestDecisionRulesAndDryRun(t *testing.T) {
	t.Parallel()
	rules := []stage.DecisionRule{
		{Name: "keep-full", Tools: []string{"manage_files"}, When: `effect != "read" && args.action == "delete" && args.path.startsWith("full/")`,
			Verdict: call.Deny, Reason: "files under full/ are kept"},
		{Name: "scratch", Servers: []string{"files"}, When: `tool == "manage_files" && has(args.path) && args.path == "scratch.txt"`, Verdict: call.Allow},
	}
	t.Run("enforce", func(t *testing.T) {
		dir, url := filesGateway(t, &stage.DecideOptions{Rules: rules}, nil)
		p := wiretest.Stateless(url, elicitCaps)
		r := p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "full/inner/x.txt"}, nil, ""))
		if r.Error != nil || r.Result["isError"] != true || !strings.Contains(resultText(r), "files under full/ are kept") {
			t.Errorf("denied: %s", r.Raw)
		}
		if !exists(t, filepath.Join(dir, "full", "inner", "x.txt")) {
			t.Error("the denied call ran")
		}
		if err := os.WriteFile(filepath.Join(dir, "scratch.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r = p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "scratch.txt"}, nil, ""))
		if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["isError"] == true || exists(t, filepath.Join(dir, "scratch.txt")) {
			t.Errorf("allowed by rule: %s", r.Raw)
		}
	})
	t.Run("dry-run", func(t *testing.T) {
		log := &syncBuffer{calls: make(chan struct{}, 8)}
		logger := slog.New(slog.NewJSONHandler(log, nil))
		dir, url := filesGateway(t, &stage.DecideOptions{Rules: rules, Mode: stage.DryRun}, logger)
		p := wiretest.Stateless(url, elicitCaps)
		r := p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "full/inner/x.txt"}, nil, ""))
		if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["isError"] == true || exists(t, filepath.Join(dir, "full", "inner", "x.txt")) {
			t.Errorf("dry-run deny: %s", r.Raw)
		}
		r = p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "notes.txt"}, nil, ""))
		if r.Error != nil || r.Result["resultType"] != "complete" || exists(t, filepath.Join(dir, "notes.txt")) {
			t.Errorf("dry-run confirm: %s", r.Raw)
		}
		<-log.calls
		<-log.calls
		out := log.String()
		for _, want := range []string{
			`"verdict":"deny","reason":"files under full/ are kept","rule":"keep-full","dryRun":true`,
			`"verdict":"confirm","reason":"the call deletes (effect delete, from this call's resolution)","dryRun":true`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %s:\n%s", want, out)
			}
		}
	})
}

// TestConfirmThenUpstreamQuestions confirms a delete_folder of a
// non-empty folder, whose upstream then asks its own question: the
// 2026-07-28 client answers it without being asked to confirm again; the
// upstream's round cannot be answered twice, nor its state used for
// another call, in front of an upstream of either era.
func TestConfirmThenUpstreamQuestions(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{modern, legacy} {
		t.Run("upstream "+upEra, func(t *testing.T) {
			dir, root := foldersRoot(t)
			_, url := startGateway(t, &gateway.Options{Decisions: &stage.DecideOptions{},
				Upstreams: []gateway.UpstreamSpec{{Name: "folders", URL: serveEra(t, foldertool.NewServer(root, nil), upEra)}}})
			p := wiretest.Stateless(url, elicitCaps)
			full := map[string]any{"path": "full"}
			state, msg := confirmQuestion(t, p.Call(t, "tools/call", toolCall("delete_folder", full, nil, "")))
			if !strings.Contains(msg, "Tool: delete_folder") || !strings.Contains(msg, "path: full") {
				t.Errorf("message: %s", msg)
			}
			r := p.Call(t, "tools/call", toolCall("delete_folder", full, accept(), state))
			if r.Error != nil || r.Result["resultType"] != "input_required" {
				t.Fatalf("after the confirmation: %s", r.Raw)
			}
			asks := r.Result["inputRequests"].(map[string]any)
			if _, ours := asks[stage.ConfirmKey]; ours || len(asks) != 1 {
				t.Fatalf("the upstream's question: %s", wiretest.MustJSON(asks))
			}
			var key string
			for k := range asks {
				key = k
			}
			round := r.Result["requestState"].(string)
			answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"delete": true}}}
			retry := func(args map[string]any) *wiretest.Response {
				return p.Call(t, "tools/call", map[string]any{"name": "delete_folder", "arguments": args, "inputResponses": answer, "requestState": round})
			}
			// The round's state for another call is refused.
			if r := retry(map[string]any{"path": "old"}); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("round state for other arguments: %s", r.Raw)
			}
			if !exists(t, filepath.Join(dir, "full")) || !exists(t, filepath.Join(dir, "old")) {
				t.Fatal("a refused retry touched the upstream")
			}
			r = retry(full)
			if r.Error != nil || r.Result["resultType"] != "complete" || !strings.Contains(resultText(r), "deleted: full") {
				t.Fatalf("answered: %s", r.Raw)
			}
			if exists(t, filepath.Join(dir, "full")) {
				t.Error("full/ still exists")
			}
			if r := retry(full); r.Error == nil || r.Error.Code != -32602 {
				t.Errorf("round answered twice: %s", r.Raw)
			}
		})
	}
}

// TestConfirmStateUnavailable: when the shared state cannot be reached,
// a call to confirm is neither asked nor run, and the client is told why;
// a read still runs.
func TestConfirmStateUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	st := state.NewRedis(client, nil)
	t.Cleanup(func() {
		st.Close()
		client.Close()
	})
	root := filesDir(t)
	s := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	_, url := startGateway(t, &gateway.Options{Decisions: &stage.DecideOptions{}, State: st,
		Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: serveEra(t, s, modern)}}})
	p := wiretest.Stateless(url, elicitCaps)
	r := p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "delete", "path": "notes.txt"}, nil, ""))
	if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "the call needs confirmation, and the gateway cannot record it") ||
		!strings.Contains(r.Error.Message, addr) {
		t.Errorf("delete: %s", r.Raw)
	}
	if !exists(t, filepath.Join(root.Name(), "notes.txt")) {
		t.Error("the call ran")
	}
	r = p.Call(t, "tools/call", toolCall("manage_files", map[string]any{"action": "read", "path": "notes.txt"}, nil, ""))
	if r.Error != nil || r.Result["isError"] == true {
		t.Errorf("read: %s", r.Raw)
	}
}

// TestListingSaysWhatTheGatewayDoes: a tool the gateway asks about before
// every call (declared destructive, without requiresConfirmation) is listed
// with mcp.dev/requiresConfirmation true, so that lint against the gateway
// reports what the gateway does, not the upstream's raw declaration; in
// dry-run, when nothing is asked, the listing is the upstream's.
func TestListingSaysWhatTheGatewayDoes(t *testing.T) {
	t.Parallel()
	for _, mode := range []stage.Mode{stage.Enforce, stage.DryRun} {
		t.Run(string(mode), func(t *testing.T) {
			up := gateway.UpstreamSpec{Name: "fw", Command: firstwins.Build(t), Args: []string{"-dir", t.TempDir()}}
			g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{up}, Decisions: &stage.DecideOptions{Mode: mode}})
			r := wiretest.Stateless(url, nil).Call(t, "tools/list", nil)
			if r.Error != nil {
				t.Fatal(r.Raw)
			}
			body, _ := json.Marshal(map[string]any{"tools": r.Result["tools"]})
			target, err := lint.ParseCatalog(body)
			if err != nil {
				t.Fatal(err)
			}
			var unconfirmed int
			for _, f := range lint.Findings(target) {
				if f.Check == lint.CheckDestructiveUnconfirmed {
					unconfirmed++
				}
			}
			marked := strings.Contains(string(r.Raw), `"mcp.dev/requiresConfirmation":true`)
			switch {
			case mode == stage.Enforce && (!marked || unconfirmed != 0):
				t.Errorf("enforced: requiresConfirmation listed %v, lint finds %d destructive-unconfirmed: %s", marked, unconfirmed, r.Raw)
			case mode == stage.DryRun && (marked || unconfirmed != 1):
				t.Errorf("dry run: requiresConfirmation listed %v, lint finds %d destructive-unconfirmed", marked, unconfirmed)
			}
			// The page's safety table is the table of the listing clients
			// read.
			tables, err := g.SafetyTables(context.Background())
			if err != nil || len(tables) != 1 || len(tables[0].Tools) != 1 {
				t.Fatalf("safety tables: %d, %v", len(tables), err)
			}
			listed := safety.FromTarget(target)
			if got, want := tables[0].Tools[0].Static, listed.Tools[0].Static; !reflect.DeepEqual(got, want) {
				t.Errorf("the page's row %+v, the listing's %+v", got, want)
			}

		})
	}
}
