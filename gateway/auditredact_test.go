package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// The secrets of the sensitive file: an AWS access key (gitleaks'
// aws-access-token rule) and an e-mail address.
const (
	awsKey     = "AKIAQYLPMN5HHHFPZAM2"
	email      = "jane.doe@example.com"
	secretText = "deploy notes\naws_access_key_id = " + awsKey + "\ncontact: " + email + "\n"
)

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
