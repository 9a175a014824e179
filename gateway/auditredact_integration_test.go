//go:build integration

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
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

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
