package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// The secrets of the sensitive file: an AWS access key (gitleaks'
// aws-access-token rule) and an e-mail address.
const (
	awsKey     = "AKIAQYLPMN5HHHFPZAM2"
	email      = "jane.doe@example.com"
	secretText = "deploy notes\naws_access_key_id = " + awsKey + "\ncontact: " + email + "\n"
)

// recorded wraps an upstream's handler and keeps the bodies of the
// tools/call requests it receives.
type recorded struct {
	h      http.Handler
	mu     sync.Mutex
	bodies []string
}

func (r *recorded) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(b))
	if bytes.Contains(b, []byte(`"tools/call"`)) {
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
	}
	r.h.ServeHTTP(w, req)
}

func (r *recorded) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// docInput and docOutput are the typed tool of the docs upstream.
type docInput struct {
	Path string `json:"path"`
}
type docOutput struct {
	Content string `json:"content"`
}

// docsServer is a 2026-07-28 Go server over HTTP whose read_doc returns
// a file's text as structured content (and, as the SDK does, the same
// JSON as text).
func docsServer(t *testing.T, dir, era string) string {
	return serveEra(t, docsMCP(dir), era)
}

// docsMCP is the server docsServer serves.
func docsMCP(dir string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_doc", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in docInput) (*mcp.CallToolResult, docOutput, error) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.Base(in.Path)))
			return nil, docOutput{Content: string(b)}, err
		})
	return s
}

// gatewayFromConfig maps the YAML config onto options and starts a
// gateway with them.
func gatewayFromConfig(t *testing.T, yaml string) (*gateway.Gateway, string, *gateway.Options) {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "gateway.yaml"), []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, url := startGateway(t, opts)
	return g, url, opts
}

// auditLog reads every record of the store spec names, oldest first.
func auditLog(t *testing.T, spec string) []*audit.Record {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), spec, &sqlstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []*audit.Record
	for r, err := range s.Query(context.Background(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestRedactionOnTheWire reads a file holding an AWS key and an e-mail
// address through the gateway, from three upstreams whose read tools the
// configuration declares confidential (an override, a rule): the Go files
// server over 2026-07-28 HTTP (the passthrough path), a Go server whose
// result is structured content (over 2026-07-28 and, where a legacy
// client's call passes through, 2025-11-25), and the npm filesystem server (2025-11-25
// over stdio, structured content too). Clients of both eras get every
// result redacted, in text and structured content; the passthrough path
// was taken; the audit log counts the kinds and holds neither value.
func TestRedactionOnTheWire(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secrets.txt"), []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fs := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range fs.Sessions() {
			ss.Close()
		}
	})
	files := &recorded{h: endpoint.NewHandler(fs, nil)}
	// The docs server again, speaking 2025-11-25 only.
	old := docsMCP(dir)
	t.Cleanup(func() {
		for ss := range old.Sessions() {
			ss.Close()
		}
	})
	oldDocs := &recorded{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return old }, nil)}
	spec := npmServers(t)("npm", "server-filesystem", dir)
	dbPath := filepath.Join(t.TempDir(), "audit.db")
	g, url, _ := gatewayFromConfig(t, fmt.Sprintf(`
servers:
  files:
    url: %s
    overrides:
      manage_files:
        hints: {resultSensitivity: confidential}
  docs:
    url: %s
    rules:
      - name: docs-confidential
        tool: read_doc
        when: args.path.endsWith("secrets.txt")
        hints: {resultSensitivity: confidential}
  olddocs:
    url: %s
    rules:
      - name: olddocs-confidential
        tool: read_doc
        when: args.path.endsWith("secrets.txt")
        hints: {resultSensitivity: confidential}
  npm:
    command: %s
    args: [%q, %q]
    overrides:
      read_text_file:
        hints: {resultSensitivity: confidential}
audit:
  path: %s
`, serveHTTP(t, files), docsServer(t, dir, modern), serveHTTP(t, oldDocs), spec.Command, spec.Args[0], spec.Args[1], dbPath))

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"files__manage_files", map[string]any{"path": "secrets.txt", "action": "read"}},
		{"docs__read_doc", map[string]any{"path": "secrets.txt"}},
		// 2025-11-25 over HTTP: a legacy client's call passes through.
		{"olddocs__read_doc", map[string]any{"path": "secrets.txt"}},
		{"npm__read_text_file", map[string]any{"path": filepath.Join(dir, "secrets.txt")}},
	}
	n := 0
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		for _, c := range calls {
			params := map[string]any{"name": c.tool, "arguments": c.args, "x-vendor": map[string]any{"kept": true}}
			r := p.Call(t, "tools/call", params)
			n++
			raw := string(r.Raw)
			if r.Error != nil || strings.Contains(raw, awsKey) || strings.Contains(raw, email) ||
				!strings.Contains(raw, "[REDACTED:aws-access-token]") || !strings.Contains(raw, "[REDACTED:email]") ||
				!strings.Contains(raw, "deploy notes") {
				t.Errorf("%s %s: not redacted: %s", p.Version, c.tool, raw)
			}
			if c.tool != "files__manage_files" {
				sc, _ := r.Result["structuredContent"].(map[string]any)
				if s := fmt.Sprint(sc["content"]); !strings.Contains(s, "[REDACTED:aws-access-token]") || !strings.Contains(s, "[REDACTED:email]") {
					t.Errorf("%s %s: structured content %v", p.Version, c.tool, r.Result["structuredContent"])
				}
			}
			if p.Version == modern && r.Result["resultType"] != "complete" {
				t.Errorf("%s %s: resultType %v", p.Version, c.tool, r.Result["resultType"])
			}
		}
		p.Close()
	}
	// The 2026-07-28 call of the files server took the passthrough path:
	// the upstream got the client's own _meta (its clientInfo), where the
	// legacy call, decoded, carries the gateway's; neither carries x-vendor,
	// which the gateway does not judge and so never forwards.
	if b := files.calls(); len(b) != 2 || !strings.Contains(b[0], `"name":"wiretest"`) || strings.Contains(b[1], `"name":"wiretest"`) ||
		strings.Contains(b[0], "x-vendor") || strings.Contains(b[1], "x-vendor") {
		t.Errorf("files upstream got %q; want the 2026-07-28 call passed through, the legacy one decoded, no x-vendor", b)
	}
	// The legacy client's call of the 2025-11-25 docs server passed through
	// on the gateway's session with it (under an id of the gateway's).
	if b := oldDocs.calls(); !slices.ContainsFunc(b, func(s string) bool { return strings.Contains(s, `"id":"preflight-call-`) }) {
		t.Errorf("2025-11-25 docs upstream got %q; want a legacy client's call passed through", b)
	}

	// A file that is not declared sensitive passes untouched.
	p := wiretest.Stateless(url, nil)
	r := p.Call(t, "tools/call", map[string]any{"name": "docs__read_doc", "arguments": map[string]any{"path": "other.txt"}})
	if r.Error != nil {
		t.Errorf("other.txt: %s", r.Raw)
	}
	p.Close()
	n++

	g.Close() // writes the buffered records
	recs := auditLog(t, "sqlite:"+dbPath)
	if len(recs) != n {
		t.Fatalf("%d audit records for %d calls", len(recs), n)
	}
	for _, rec := range recs[:n-1] {
		if rec.Redactions["aws-access-token"] != 1 || rec.Redactions["email"] != 1 || rec.Outcome != audit.OutcomeOK {
			t.Errorf("audit %s/%s: redactions %v outcome %s", rec.Server, rec.Tool, rec.Redactions, rec.Outcome)
		}
	}
	if last := recs[n-1]; last.Redactions != nil || last.Outcome != audit.OutcomeToolError {
		t.Errorf("audit of the other file: %+v", last)
	}
	for _, f := range []string{dbPath, dbPath + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(awsKey)) || bytes.Contains(b, []byte(email)) {
			t.Errorf("%s holds a redacted value", f)
		}
	}
}

// queryLog reads every record of spec, for a check made off the test's
// goroutine.
func queryLog(spec string) ([]*audit.Record, error) {
	s, err := sqlstore.Open(context.Background(), spec, &sqlstore.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []*audit.Record
	for r, err := range s.Query(context.Background(), audit.Filter{}) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// filesAt serves the Go files example over HTTP on dir (both eras; the
// gateway speaks 2026-07-28 to it), calling before on each tools/call body
// before the server sees it.
func filesAt(t *testing.T, dir string, before func(body string)) string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return filesOn(t, root, func(_ *http.Request, body []byte) {
		if before != nil && bytes.Contains(body, []byte(`"tools/call"`)) {
			before(string(body))
		}
	})
}

// TestAuditOnTheWire calls the Go files server through the gateway from
// clients of both eras (the 2026-07-28 calls on the passthrough path):
// every call is in the SQLite audit log exactly once, with its effect,
// decision and outcome; a delete is on disk, outcome unknown, when the
// upstream receives it; a call the gateway answers itself (an unknown
// tool) is not a call of any server and is not recorded.
func TestAuditOnTheWire(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes.txt", "del-2026-07-28.txt", "del-2025-11-25.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := "sqlite:" + filepath.Join(t.TempDir(), "audit.db")
	var mu sync.Mutex
	var atDelete [][]*audit.Record
	up := filesAt(t, dir, func(body string) {
		if strings.Contains(body, `"delete"`) {
			recs, err := queryLog(spec)
			if err != nil {
				t.Errorf("reading the log when the delete arrived: %v", err)
			}
			mu.Lock()
			atDelete = append(atDelete, recs)
			mu.Unlock()
		}
	})
	auditor, store, err := setup.OpenAudit(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: up}},
		Auditor: auditor, AuditStore: store})

	type want struct {
		effect  string
		outcome audit.Outcome
	}
	var wants []want
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		for _, c := range []struct {
			args map[string]any
			want
		}{
			{map[string]any{"path": "notes.txt", "action": "read"}, want{"read", audit.OutcomeOK}},
			{map[string]any{"path": "missing.txt", "action": "read"}, want{"read", audit.OutcomeToolError}},
			{map[string]any{"path": "del-" + p.Version + ".txt", "action": "delete"}, want{"delete", audit.OutcomeOK}},
		} {
			r := p.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": c.args})
			if r.Error != nil {
				t.Errorf("%s %v: %s", p.Version, c.args, r.Raw)
			}
			wants = append(wants, c.want)
		}
		if r := p.Call(t, "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s unknown tool: %s", p.Version, r.Raw)
		}
		p.Close()
	}
	for _, f := range []string{"del-2026-07-28.txt", "del-2025-11-25.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s not deleted: %v", f, err)
		}
	}
	// When each delete reached the upstream, its record was on disk,
	// without an outcome; the reads before it, batched, need not be.
	mu.Lock()
	for i, recs := range atDelete {
		last := recs[len(recs)-1]
		if len(recs) == 0 || last.Effect != "delete" || last.Outcome != audit.OutcomeUnknown || !last.Ended.IsZero() {
			t.Errorf("delete %d: the log when it reached the upstream: %+v", i, recs)
		}
	}
	if len(atDelete) != 2 {
		t.Errorf("%d deletes reached the upstream, want 2", len(atDelete))
	}
	mu.Unlock()

	g.Close()
	recs := auditLog(t, spec)
	if len(recs) != len(wants) {
		t.Fatalf("%d records for %d calls: %+v", len(recs), len(wants), recs)
	}
	// Batched reads and durable deletes are written in different orders:
	// compare by what each call did.
	count := map[want]int{}
	for _, w := range wants {
		count[w]++
	}
	for _, r := range recs {
		w := want{string(r.Effect), r.Outcome}
		count[w]--
		if r.Server != "files" || r.Tool != "manage_files" || r.Decision != audit.Allow || r.ArgsDigest == "" || r.Latency <= 0 {
			t.Errorf("record %+v", r)
		}
		if (r.Effect == "delete") != r.Destructive {
			t.Errorf("record %+v: destructive %v", r, r.Destructive)
		}
		if r.Effect == "delete" && !strings.Contains(string(r.Args), `"action":"delete"`) {
			t.Errorf("a delete's arguments are recorded in full: %s", r.Args)
		}
	}
	for w, n := range count {
		if n != 0 {
			t.Errorf("%+v: %d records off", w, n)
		}
	}
}

// TestAuditPostgresStopped audits to a real PostgreSQL server and stops
// it mid-run: a delete fails closed with the audit-unavailable error and
// the upstream is untouched (the file is still there, the upstream never
// got the call); a read proceeds under onUnavailable proceed and is
// refused under fail-closed; once the server is back, calls are recorded
// again.
func TestAuditPostgresStopped(t *testing.T) {
	for _, policy := range []string{"proceed", "fail-closed"} {
		t.Run(policy, func(t *testing.T) {
			pg := pgtest.Start(t)
			dir := t.TempDir()
			for _, f := range []string{"notes.txt", "first.txt", "keep.txt"} {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("notes\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var got []string
			up := filesAt(t, dir, func(body string) {
				mu.Lock()
				got = append(got, body)
				mu.Unlock()
			})
			received := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(got)
			}
			g, url, _ := gatewayFromConfig(t, fmt.Sprintf("servers:\n  files:\n    url: %s\ndecisions:\n  rules:\n    - {name: deletes-run, tools: [manage_files], decision: allow, reason: this test deletes}\naudit:\n  store: postgres\n  url: %q\n  onUnavailable: %s\n", up, pg.DSN(), policy))
			p := wiretest.Legacy(url, nil)
			defer p.Close()
			call := func(path, action string) *wiretest.Response {
				return p.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"path": path, "action": action}})
			}
			if r := call("first.txt", "delete"); r.Error != nil {
				t.Fatalf("delete: %s", r.Raw)
			}

			pg.Stop(t)
			before := received()
			r := call("keep.txt", "delete")
			if r.Error == nil || r.Error.Code != stage.CodeAuditUnavailable || r.Error.Message != stage.ErrAuditUnavailable {
				t.Errorf("delete with the store stopped: %s; want the audit-unavailable error", r.Raw)
			}
			if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil || received() != before {
				t.Errorf("the upstream was touched: %v, %d calls received (%d before)", err, received(), before)
			}
			r = call("during.txt", "read") // absent: a tool error if it runs
			switch policy {
			case "proceed":
				if r.Error != nil || received() != before+1 {
					t.Errorf("read with the store stopped (proceed): %s", r.Raw)
				}
			case "fail-closed":
				if r.Error == nil || r.Error.Code != stage.CodeAuditUnavailable || received() != before {
					t.Errorf("read with the store stopped (fail-closed): %s", r.Raw)
				}
			}

			pg.Restart(t)
			if r := call("keep.txt", "delete"); r.Error != nil {
				t.Errorf("delete after the restart: %s", r.Raw)
			}
			if _, err := os.Stat(filepath.Join(dir, "keep.txt")); !os.IsNotExist(err) {
				t.Errorf("keep.txt after the delete: %v", err)
			}
			if r := call("notes.txt", "read"); r.Error != nil {
				t.Errorf("read after the restart: %s", r.Raw)
			}
			g.Close() // writes the batched read
			var deletes, reads []string
			for _, r := range auditLog(t, pg.DSN()) {
				var args struct{ Path string }
				json.Unmarshal(r.Args, &args)
				switch {
				case r.Effect == "delete" && r.Outcome == audit.OutcomeOK:
					deletes = append(deletes, args.Path)
				case r.Effect == "read" && r.Outcome == audit.OutcomeOK:
					reads = append(reads, r.ArgsDigest)
				case r.Effect == "read" && r.Outcome == audit.OutcomeToolError && policy == "proceed":
					// The read while the store was down, if the batched
					// write came after the restart: proceed makes such a
					// record best-effort.
				default:
					t.Errorf("record %+v", r)
				}
			}
			// The deletes before the stop and after the restart, and the
			// read after the restart: calls are recorded again.
			if strings.Join(deletes, ",") != "first.txt,keep.txt" || len(reads) != 1 {
				t.Errorf("deletes %v and %d reads recorded; want first.txt,keep.txt and 1", deletes, len(reads))
			}
		})
	}
}

// The page reads the audit log through any store: Options.AuditStore is
// what a gateway gives it.
var _ page.AuditLog = audit.Store(nil)

// TestAuditRedactsSecretArguments: a call that carries a token in an
// argument (a .env written through a tool) reaches the upstream whole, and
// its audit record holds the token's kind, never the token, in both eras.
func TestAuditRedactsSecretArguments(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "write_note", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			got = append(got, string(req.Params.Arguments))
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		})
	spec := "sqlite:" + filepath.Join(t.TempDir(), "audit.db")
	auditor, store, err := setup.OpenAudit(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "notes", Connect: inMemory(s)}},
		Auditor: auditor, AuditStore: store})
	for _, p := range []*wiretest.Peer{wiretest.Stateless(url, nil), wiretest.Legacy(url, nil)} {
		args := map[string]any{"path": ".env", "content": "DEBUG=1\nGITHUB_TOKEN=" + fakeToken + "\n", "nested": []any{map[string]any{"v": fakeToken}}}
		if r := p.Call(t, "tools/call", map[string]any{"name": "write_note", "arguments": args}); r.Error != nil {
			t.Fatalf("%s: %s", p.Version, r.Raw)
		}
		p.Close()
	}
	mu.Lock()
	if len(got) != 2 || !strings.Contains(got[0], fakeToken) || !strings.Contains(got[1], fakeToken) {
		t.Errorf("the upstream got %q; want the arguments as sent", got)
	}
	mu.Unlock()
	g.Close()
	recs := auditLog(t, spec)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		if strings.Contains(string(r.Args), fakeToken[4:]) || strings.Count(string(r.Args), "[REDACTED:github-pat]") != 2 ||
			!strings.Contains(string(r.Args), `DEBUG=1`) {
			t.Errorf("recorded arguments %s", r.Args)
		}
	}
}
