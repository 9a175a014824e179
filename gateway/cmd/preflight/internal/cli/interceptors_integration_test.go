//go:build integration

package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/text"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/internal/npmdeps"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// interceptorsPolicy is the part of the replay's configuration that is
// policy; the servers and the clients' tokens are added to it. Results are
// redacted from confidential up and never withheld, because the fixtures
// expect a read of /workspace/.env (restricted by the filesystem pack) to
// reach the client. Cross-server flows are denied, as the fixtures'
// cross-boundary guard does. The fixtures' chain holds that guard alone,
// so writes run unasked otherwise (the filesystem server declares
// write_file destructive, which would ask a person); flow control still
// applies to a call a rule allows.
const interceptorsPolicy = `redaction:
  withhold: off
flow:
  action: deny
decisions:
  rules:
    - name: fixture-writes
      servers: [fs]
      tools: [write_file]
      decision: allow
`

// fixtureTools maps each tool the fixtures call to the upstream tool that
// does it: the npm filesystem server (fs) and a SQLite notes database (db).
var fixtureTools = map[string]struct{ server, tool string }{
	"read_file":   {"fs", "read_text_file"},
	"write_file":  {"fs", "write_file"},
	"write_query": {"db", "write_query"},
}

// fixtureRoot is where the fixtures' paths live; the replay maps it to a
// temporary directory the filesystem server serves.
const fixtureRoot = "/workspace/"

// TestInterceptorsBehaviorFixtures replays the Interceptors working group's
// behavior fixtures (gateway/testdata/interceptors/behavior, SEP-2624)
// through "preflight serve -config FILE" in front of real upstreams, the npm
// filesystem server and an MCP server over SQLite, in both eras. Each
// fixture session is a principal with a bearer token of its own (and, in
// 2025-11-25, a session of its own). A request step is a tools/call: allow
// means it reached the upstream (the database recorded the query, the file
// was written; a read returned content) and deny that it did not and the
// client was refused. A response step checks what the client got from the
// call before it, whose file the step's payload fills.
//
// Six of the ten pass in each era. The four the replay expects to fail
// (notYet) ask for a mutation the gateway does not make: the fixtures'
// secretless redactor rewrites a call's arguments so that a secret never
// leaves, where the gateway forwards exactly the arguments it judged, and
// redacts results, the audit and the page. The test fails when one of them
// starts to pass, so that the list stays true.
func TestInterceptorsBehaviorFixtures(t *testing.T) {
	fixtures := loadFixtures(t, filepath.Join("..", "..", "..", "..", "testdata", "interceptors", "behavior"))
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			r := newFixtureReplay(t, era, fixtures)
			passed := 0
			for _, f := range fixtures {
				failure, why := r.run(f), notYet[f.ID]
				switch {
				case failure == "" && why != "":
					t.Errorf("%s: passes now; take it out of notYet", f.ID)
				case failure != "" && why == "":
					t.Errorf("%s: FAIL: %s", f.ID, failure)
				case failure != "":
					t.Logf("%s: fails, as expected (%s): %s", f.ID, why, failure)
				default:
					passed++
					t.Logf("%s: pass", f.ID)
				}
			}
			t.Logf("%s: %d/%d behavior fixtures pass", era, passed, len(fixtures))
		})
	}
}

// notYet are the fixtures the gateway does not pass, and why.
var notYet = map[string]string{
	"behavior/redaction-aws_access_key":     outboundRedaction,
	"behavior/redaction-github_pat":         outboundRedaction,
	"behavior/redaction-stripe_secret_live": outboundRedaction,
	"behavior/redaction-defuses-relaybleed": outboundRedaction + "; flow control denies the relay instead",
}

const outboundRedaction = "the gateway does not rewrite a call's arguments to take a secret out"

// behaviorFixture is one behavior fixture, as much of it as a replay reads.
type behaviorFixture struct {
	ID    string        `json:"id"`
	Steps []fixtureStep `json:"steps"`
}

type fixtureStep struct {
	Phase   string `json:"phase"`
	Payload struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"payload"`
	Context struct {
		SessionID string `json:"sessionId"`
	} `json:"context"`
	Expect struct {
		Decision string   `json:"decision"`
		Forbids  []string `json:"forbids"`
		Requires []string `json:"requires"`
	} `json:"expect"`
}

// text is the text of a response step's payload.
func (s fixtureStep) text() string {
	var b strings.Builder
	for _, c := range s.Payload.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func loadFixtures(t *testing.T, dir string) []behaviorFixture {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures in %s: %v", dir, err)
	}
	var out []behaviorFixture
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var f behaviorFixture
		if err := json.Unmarshal(b, &f); err != nil || f.ID == "" || len(f.Steps) == 0 {
			t.Fatalf("%s: not a fixture: %v", name, err)
		}
		out = append(out, f)
	}
	return out
}

// fixtureReplay is one era's gateway, its upstreams and a token per
// fixture session.
type fixtureReplay struct {
	t      *testing.T
	era    string
	url    string
	dir    string // what /workspace/ maps to
	db     *sql.DB
	tokens map[string]string // fixture session -> bearer token
}

func newFixtureReplay(t *testing.T, era string, fixtures []behaviorFixture) *fixtureReplay {
	t.Helper()
	r := &fixtureReplay{t: t, era: era, dir: t.TempDir(), tokens: map[string]string{}}
	var notes *mcp.Server
	notes, r.db = sqliteNotes(t)
	db := httptest.NewServer(endpoint.NewHandler(notes, nil))
	t.Cleanup(db.Close)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "servers:\n  fs:\n    command: %q\n    args: [%q, %q]\n  db:\n    url: %q\nauth:\n  tokens:\n",
		nodeAtLeast(t, "", "20"), filesystemServer(t), r.dir, db.URL)
	for _, f := range fixtures {
		for _, s := range f.Steps {
			id := s.Context.SessionID
			if _, ok := r.tokens[id]; ok {
				continue
			}
			token, entry, err := auth.NewToken(id)
			if err != nil {
				t.Fatal(err)
			}
			r.tokens[id] = token
			fmt.Fprintf(&cfg, "    - {principal: %q, sha256: %q}\n", id, entry.SHA256)
		}
	}
	cfg.WriteString(interceptorsPolicy)
	// Pins of its own, not the default store other tests expect absent.
	fmt.Fprintf(&cfg, "pins:\n  path: %q\n", filepath.Join(t.TempDir(), "pins.db"))
	path := filepath.Join(t.TempDir(), "preflight.yaml")
	writeFile(t, path, cfg.String())
	r.url, _, _, _ = runServe(t, "-config", path, "-http", "127.0.0.1:0")
	return r
}

// filesystemServer is the npm filesystem server's script.
func filesystemServer(t *testing.T) string {
	t.Helper()
	deps, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "..", "lint", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	npmdeps.EnsureT(t, deps)
	return npmdeps.Bin(t, deps, "server-filesystem")
}

// run replays one fixture and returns why it fails, "" when it passes.
func (r *fixtureReplay) run(f behaviorFixture) string {
	peers := map[string]*wiretest.Peer{}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
	}()
	last := map[string]*wiretest.Response{} // fixture session -> its last call's response
	for i, s := range f.Steps {
		p := peers[s.Context.SessionID]
		if p == nil {
			p = &wiretest.Peer{URL: r.url, Version: r.era, Header: http.Header{"Authorization": {"Bearer " + r.tokens[s.Context.SessionID]}}}
			peers[s.Context.SessionID] = p
		}
		var failure string
		switch s.Phase {
		case "request":
			var next *fixtureStep
			if i+1 < len(f.Steps) && f.Steps[i+1].Phase == "response" {
				next = &f.Steps[i+1]
			}
			last[s.Context.SessionID], failure = r.request(p, s, next)
		case "response":
			failure = r.response(last[s.Context.SessionID], s)
		default:
			failure = "unknown phase " + s.Phase
		}
		if failure != "" {
			return fmt.Sprintf("step %d (%s): %s", i+1, strings.TrimSpace(s.Phase+" "+s.Payload.Name), failure)
		}
	}
	return ""
}

// request makes a request step's call; before a read whose response the
// next step gives, it writes that response into the file read.
func (r *fixtureReplay) request(p *wiretest.Peer, s fixtureStep, next *fixtureStep) (*wiretest.Response, string) {
	to, ok := fixtureTools[s.Payload.Name]
	if !ok {
		return nil, "no upstream tool for " + s.Payload.Name
	}
	args := map[string]any{}
	for k, v := range s.Payload.Arguments {
		if v, ok := v.(string); ok && k == "path" {
			args[k] = r.mapPath(v)
			continue
		}
		args[k] = v
	}
	if next != nil {
		path, _ := args["path"].(string)
		if err := os.WriteFile(path, []byte(next.text()), 0o600); err != nil {
			r.t.Fatal(err)
		}
	}
	seen := r.mark(s.Payload.Name, args)
	resp := p.Call(r.t, "tools/call", map[string]any{"name": to.server + "__" + to.tool, "arguments": args})
	sent, reached := r.reached(s.Payload.Name, args, seen, resp)
	switch s.Expect.Decision {
	case "allow":
		if !reached && s.Payload.Name == "read_file" {
			return resp, "allow expected, the client got no content: " + text.Clip(string(resp.Raw), 300)
		}
		if !reached {
			return resp, fmt.Sprintf("allow expected, %s did not reach the upstream: %s", s.Payload.Name, text.Clip(string(resp.Raw), 300))
		}
		for _, v := range s.Expect.Forbids {
			if strings.Contains(sent, v) {
				return resp, fmt.Sprintf("%s ran with %q, which must not reach the upstream: it received %q", s.Payload.Name, v, sent)
			}
		}
		for _, v := range s.Expect.Requires {
			if !strings.Contains(sent, v) {
				return resp, fmt.Sprintf("%s ran without %q: the upstream received %q", s.Payload.Name, v, sent)
			}
		}
	case "deny":
		if reached {
			return resp, fmt.Sprintf("deny expected, %s ran: the upstream received %q", s.Payload.Name, sent)
		}
		if !refused(resp) {
			return resp, "deny expected, the call did not run but the client was not refused: " + text.Clip(string(resp.Raw), 300)
		}
	default:
		return resp, "unknown decision " + s.Expect.Decision
	}
	return resp, ""
}

// response checks what the client got for the call before it: allow means
// the payload's text, where the gateway may have replaced secrets by
// [REDACTED:kind], and nothing the step forbids.
func (r *fixtureReplay) response(resp *wiretest.Response, s fixtureStep) string {
	if resp == nil {
		return "no request before it in this session"
	}
	got := wireText(resp)
	delivered := !refused(resp) && redactedFrom(s.text(), got)
	switch s.Expect.Decision {
	case "allow":
		if !delivered {
			return fmt.Sprintf("allow expected, the client did not get %q: %s", s.text(), text.Clip(string(resp.Raw), 300))
		}
		for _, v := range s.Expect.Forbids {
			if strings.Contains(got, v) {
				return fmt.Sprintf("the client got %q, which it must not: %q", v, got)
			}
		}
		for _, v := range s.Expect.Requires {
			if !strings.Contains(got, v) {
				return fmt.Sprintf("the client got %q without %q", got, v)
			}
		}
	case "deny":
		if delivered {
			return fmt.Sprintf("deny expected, the client got %q", got)
		}
	default:
		return "unknown decision " + s.Expect.Decision
	}
	return ""
}

// mapPath maps a fixture's /workspace/ path into the served directory.
func (r *fixtureReplay) mapPath(p string) string {
	rest, ok := strings.CutPrefix(p, fixtureRoot)
	if !ok {
		r.t.Fatalf("fixture path %q is outside %s", p, fixtureRoot)
	}
	return filepath.Join(r.dir, filepath.FromSlash(rest))
}

// mark prepares to see whether a call reaches its upstream: it removes
// the file a write_file is to write, and returns how many queries the
// database has received.
func (r *fixtureReplay) mark(tool string, args map[string]any) (seen int) {
	if path, _ := args["path"].(string); tool == "write_file" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.t.Fatal(err)
		}
	}
	return r.receivedCount()
}

// reached says whether the call reached its upstream and what the upstream
// received: the queries the database recorded since seen, the content of
// the file written (mark removed it). A read leaves no trace but its result: it ran when the
// client got a result that is not a refusal.
func (r *fixtureReplay) reached(tool string, args map[string]any, seen int, resp *wiretest.Response) (sent string, ok bool) {
	switch tool {
	case "write_query":
		queries := r.receivedSince(seen)
		return strings.Join(queries, "\n"), len(queries) > 0
	case "write_file":
		b, err := os.ReadFile(args["path"].(string))
		return string(b), err == nil
	default:
		return "", !refused(resp)
	}
}

// receivedCount is how many queries the database has received.
func (r *fixtureReplay) receivedCount() int {
	var n int
	if err := r.db.QueryRow(`SELECT count(*) FROM received`).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// receivedSince returns the queries received after the first n.
func (r *fixtureReplay) receivedSince(n int) []string {
	rows, err := r.db.Query(`SELECT query FROM received ORDER BY id LIMIT -1 OFFSET ?`, n)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// wireText is the text of a tools/call result's content.
func wireText(r *wiretest.Response) string {
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

// refused says whether the client got an error or a tool error.
func refused(r *wiretest.Response) bool {
	return r.Error != nil || r.Result["isError"] == true
}

// placeholder is what redaction puts in place of a value.
var placeholder = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+\]`)

// redactedFrom says whether got is want with some of its parts replaced by
// redaction placeholders (or want itself).
func redactedFrom(want, got string) bool {
	parts := placeholder.Split(got, -1)
	if len(parts) == 1 {
		return got == want
	}
	rest, ok := strings.CutPrefix(want, parts[0])
	if !ok {
		return false
	}
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 1 {
			return false
		}
		rest = rest[i+len(part):]
	}
	last := parts[len(parts)-1]
	return len(rest) > len(last) && strings.HasSuffix(rest, last)
}

// sqliteNotes is an MCP server with one tool, write_query, which runs an
// INSERT on a SQLite database of notes. Every query it receives is first
// recorded in the table received, so that a test asks the database what
// reached it.
func sqliteNotes(t *testing.T) (*mcp.Server, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "notes.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
		CREATE TABLE received (id INTEGER PRIMARY KEY, query TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes-db", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "write_query",
		Description: "Runs an INSERT statement on the notes database (table notes, column body).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool), OpenWorldHint: new(bool)},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO received (query) VALUES (?)`, in.Query); err != nil {
			return nil, err
		}
		words := strings.Fields(in.Query)
		if len(words) == 0 || !strings.EqualFold(words[0], "INSERT") {
			return toolError(errors.New("only INSERT statements are run")), nil
		}
		res, err := db.ExecContext(ctx, in.Query)
		if err != nil {
			return toolError(err), nil
		}
		n, _ := res.RowsAffected()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d row(s) inserted", n)}}}, nil
	})
	return s, db
}

func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
