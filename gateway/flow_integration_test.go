//go:build integration

package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
)

// Secrets the flow tests read from a .env file and try to send on.
const (
	flowPAT    = "ghp_Xa2bC3dEf4gH5iJk6Lm7nN8oPq9rS0tU1vW2"
	flowAWS    = "AKIA5MZXN8QRF3WBY6OE"
	flowUnread = "ghp_Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8"
)

// dbServer is an upstream whose write_query runs SQL on a real SQLite
// database (effect write), as a database MCP server does.
func dbServer(t *testing.T) (*mcp.Server, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE notes (who TEXT, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "db", Version: "1"}, nil)
	type in struct {
		Query string `json:"query"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "write_query", Description: "Runs an INSERT, UPDATE or DELETE.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false)}, Meta: mcp.Meta{"mcp.dev/effect": "write"}},
		func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			r, err := db.ExecContext(ctx, a.Query)
			if err != nil {
				return nil, nil, err
			}
			n, _ := r.RowsAffected()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d rows affected", n)}}}, nil, nil
		})
	return s, db
}

// rows counts the notes written by who.
func rows(t *testing.T, db *sql.DB, who string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM notes WHERE who = ?`, who).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// connectWith connects a Go SDK client at version presenting token; with
// elicit it declares elicitation and answers with it.
func connectWith(t *testing.T, url, version, token string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "flow-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls tool and returns its text and whether it was a tool
// error.
func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return contentText(t, res), res.IsError
}

// flowGateway starts the gateway in front of the npm filesystem server
// over dir and the database server, with redaction off (so that the
// client is shown the .env file whole) and the flow section given, for
// two principals, alice and bob; it returns the URL and their tokens.
func flowGateway(t *testing.T, dir string, db *mcp.Server, flow string) (g *gateway.Gateway, url, alice, bob, auditPath string) {
	t.Helper()
	fs := npmServers(t)("fs", "server-filesystem", dir)
	alice, aliceEntry, err := auth.NewToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, bobEntry, err := auth.NewToken("bob")
	if err != nil {
		t.Fatal(err)
	}
	auditPath = filepath.Join(t.TempDir(), "audit.db")
	g, url, _ = gatewayFromConfig(t, fmt.Sprintf(`auth:
  tokens:
    - {principal: alice, sha256: %q}
    - {principal: bob, sha256: %q}
servers:
  fs:
    command: %q
    args: [%q, %q]
  db:
    url: %s
redaction: {level: off, withhold: off}
decisions:
  rules:
    - {name: fs-writes, servers: [fs], tools: [write_file], decision: allow}
audit:
  path: %s
%s`, aliceEntry.SHA256, bobEntry.SHA256, fs.Command, fs.Args[0], fs.Args[1], serveEra(t, db, modern), auditPath, flow))
	return g, url, alice, bob, auditPath
}

// envDir makes a directory with a .env file holding a GitHub token and an
// AWS key.
func envDir(t *testing.T) string {
	dir := t.TempDir()
	env := "DEBUG=1\nGITHUB_TOKEN=" + flowPAT + "\nAWS_ACCESS_KEY_ID=" + flowAWS + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func insert(who, value string) map[string]any {
	return map[string]any{"query": fmt.Sprintf("INSERT INTO notes (who, body) VALUES ('%s', 'token=%s')", who, value)}
}

// TestFlowRelayConfirmed: in both eras, a client reads a .env file from
// the filesystem server (the real npm one) and then sends the GitHub
// token, or the AWS key, to the database server in an INSERT. The
// gateway asks first: a client that declines, or cannot be asked, does not
// get the row written, and is told where the value came from. Writing
// the value back to the filesystem server runs unasked; a value never
// read is not stopped; another principal, and another legacy session of
// the same one, sending the same value are not stopped.
func TestFlowRelayConfirmed(t *testing.T) {
	dir := envDir(t)
	dbs, db := dbServer(t)
	_, url, alice, bob, _ := flowGateway(t, dir, dbs, "")
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			who := func(s string) string { return s + "-" + era }
			const reason = "sends a value read from fs__read_text_file 1 call ago to db__write_query"
			var asked []string
			declines := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			for _, c := range []struct {
				name   string
				elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
				value  string
				told   string // what the tool error says
			}{{"declines", declines, flowPAT, "the confirmation was declined"}, {"cannot be asked", nil, flowAWS, reason}} {
				cs := connectWith(t, url, era, alice, c.elicit)
				if got, isErr := callText(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, ".env")}); isErr || !strings.Contains(got, c.value) {
					t.Fatalf("%s: reading .env: %v %s", c.name, isErr, got)
				}
				got, isErr := callText(t, cs, "db__write_query", insert(who("alice"), c.value))
				if !isErr || !strings.Contains(got, c.told) {
					t.Errorf("%s: the relay: %v %s", c.name, isErr, got)
				}
				if strings.Contains(got, c.value) {
					t.Errorf("%s: the refusal repeats the value: %s", c.name, got)
				}
				if n := rows(t, db, who("alice")); n != 0 {
					t.Fatalf("%s: %d rows written", c.name, n)
				}
				// Written back where it came from: unasked.
				copyPath := filepath.Join(dir, who("copy-"+strings.ReplaceAll(c.name, " ", "-"))+".txt")
				if got, isErr := callText(t, cs, "fs__write_file", map[string]any{"path": copyPath, "content": "TOKEN=" + c.value}); isErr {
					t.Errorf("%s: writing back: %s", c.name, got)
				}
				if b, _ := os.ReadFile(copyPath); !strings.Contains(string(b), c.value) {
					t.Errorf("%s: the file written back holds %q", c.name, b)
				}
				// A value the client never read goes.
				if got, isErr := callText(t, cs, "db__write_query", insert(who("alice-unread-"+c.name), flowUnread)); isErr {
					t.Errorf("%s: a value never read: %s", c.name, got)
				}
			}
			if len(asked) != 1 || !strings.Contains(asked[0], reason) {
				t.Errorf("the questions asked: %q, want one saying %q", asked, reason)
			}
			// Another principal, who never read it.
			bobs := connectWith(t, url, era, bob, nil)
			if got, isErr := callText(t, bobs, "db__write_query", insert(who("bob"), flowPAT)); isErr {
				t.Errorf("bob: %s", got)
			}
			if rows(t, db, who("bob")) != 1 {
				t.Error("bob's row is absent")
			}
			if era == legacy {
				// Another session of alice's, which never read it.
				other := connectWith(t, url, era, alice, nil)
				if got, isErr := callText(t, other, "db__write_query", insert(who("alice-other-session"), flowPAT)); isErr {
					t.Errorf("another session: %s", got)
				}
			}
		})
	}
}

// TestFlowRelayDenied: with flow.action deny, the relay is a tool error
// with the reason, in both eras, and the audit log records the flow and
// its source, never the value.
func TestFlowRelayDenied(t *testing.T) {
	dir := envDir(t)
	dbs, db := dbServer(t)
	g, url, alice, _, auditPath := flowGateway(t, dir, dbs, "flow: {action: deny}\n")
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			cs := connectWith(t, url, era, alice, nil)
			callText(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, ".env")})
			callText(t, cs, "fs__list_allowed_directories", map[string]any{})
			got, isErr := callText(t, cs, "db__write_query", insert("alice-"+era, flowAWS))
			if !isErr || !strings.Contains(got, "sends a value read from fs__read_text_file 2 calls ago to db__write_query") {
				t.Errorf("the relay: %v %s", isErr, got)
			}
			if rows(t, db, "alice-"+era) != 0 {
				t.Error("the row was written")
			}
		})
	}
	g.Close() // writes the buffered records
	denied := 0
	for _, r := range auditLog(t, "sqlite:"+auditPath) {
		if r.Tool != "write_query" {
			continue
		}
		if r.Decision != "deny" || !strings.Contains(r.Reason, "sends a value read from fs__read_text_file") {
			t.Errorf("audit: %s %q", r.Decision, r.Reason)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), flowAWS) {
			t.Errorf("the audit record holds the value: %s", b)
		}
		denied++
	}
	if denied != 2 {
		t.Errorf("%d denied relays in the audit log, want 2", denied)
	}
}
