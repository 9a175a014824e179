package approval_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/hints"
)

// personal is a call whose principal and arguments hold personal data and
// a credential, none of which may reach a URL.
func personal(t *testing.T) *approval.Request {
	t.Helper()
	s := approval.New(nil, nil)
	r, err := s.Ask(t.Context(), approval.Call{
		Principal: "alice@example.com", Server: "mail", Tool: "delete\u202e_thread\n",
		Arguments: json.RawMessage(`{"thread":"Dr. Jane Roe, 42 Main St","api_key":"sk-live-123"}`),
		Effect:    hints.EffectDelete, Reason: "deletes mail\x1b[31m",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLink(t *testing.T) {
	t.Parallel()
	const id = "AAAAAAAAAAAAAAAAAAAAAA"
	for base, want := range map[string]string{
		"http://127.0.0.1:8787":        "http://127.0.0.1:8787/approvals/" + id,
		"http://127.0.0.1:8787/":       "http://127.0.0.1:8787/approvals/" + id,
		"https://gw.example/preflight": "https://gw.example/preflight/approvals/" + id,
	} {
		if got, err := approval.Link(base, id); err != nil || got != want {
			t.Errorf("Link(%q) = %q, %v; want %q", base, got, err, want)
		}
	}
	for _, base := range []string{"", "/relative", "127.0.0.1:8787", "ftp://h/", "http://user:pw@h/", "http://h/?token=x", "http://h/?", "http://h/#f", "javascript:alert(1)", "http://%zz"} {
		if got, err := approval.Link(base, id); err == nil {
			t.Errorf("Link(%q) = %q, want an error", base, got)
		}
	}
	if _, err := approval.Link("http://h", "../../etc"); err == nil {
		t.Error("Link accepted a malformed id")
	}
}

// TestURLElicitationOnTheWire: the 2026-07-28 input request is
// {"method":"elicitation/create","params":{"mode":"url","url":...,"message":...}}
// under the gateway's key, without elicitationId, and its URL holds the
// request's id and nothing of the principal or the arguments.
func TestURLElicitationOnTheWire(t *testing.T) {
	t.Parallel()
	r := personal(t)
	p, err := approval.URLElicitation("http://127.0.0.1:8787", r)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(mcp.InputRequestMap{approval.InputKey: p})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	ir, ok := got["preflight.approval"]
	if !ok || len(got) != 1 || ir.Method != "elicitation/create" {
		t.Fatalf("inputRequests = %s", wire)
	}
	if ir.Params["mode"] != "url" || ir.Params["url"] != "http://127.0.0.1:8787/approvals/"+r.ID || len(ir.Params) != 3 {
		t.Errorf("params = %v; want mode, url and message only", ir.Params)
	}
	u, _ := url.Parse(p.URL)
	for _, secret := range []string{"alice", "example.com", "Jane", "Main", "sk-live", "thread", r.ArgsDigest} {
		if strings.Contains(p.URL, secret) || strings.Contains(u.Path, secret) {
			t.Errorf("URL %s carries %q", p.URL, secret)
		}
	}
	msg := ir.Params["message"].(string)
	for _, leak := range []string{"Jane", "sk-live", "alice", "\x1b", "\n", "\u202e"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message %q carries %q", msg, leak)
		}
	}
	for _, want := range []string{`delete\u202e_thread\u000a on mail`, "deletes mail", "approve"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}

	legacy, err := approval.LegacyURLElicitation("http://127.0.0.1:8787", r)
	if err != nil || legacy.ElicitationID != r.ID || legacy.URL != p.URL || legacy.Mode != "url" {
		t.Errorf("legacy elicitation = %+v, %v", legacy, err)
	}
}

func TestSupportsURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caps *mcp.ClientCapabilities
		want bool
	}{
		{nil, false},
		{&mcp.ClientCapabilities{}, false},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, false},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}, false},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, true},
	} {
		if got := approval.SupportsURL(tc.caps); got != tc.want {
			b, _ := json.Marshal(tc.caps)
			t.Errorf("SupportsURL(%s) = %v", b, got)
		}
	}
	var caps mcp.ClientCapabilities // as declared on the wire
	if err := json.Unmarshal([]byte(`{"elicitation":{"form":{},"url":{}}}`), &caps); err != nil || !approval.SupportsURL(&caps) {
		t.Errorf("declared form and url: SupportsURL false (%v)", err)
	}
}

func TestRetryText(t *testing.T) {
	t.Parallel()
	r := personal(t)
	text, err := approval.RetryText("http://127.0.0.1:8787", r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Not run", "http://127.0.0.1:8787/approvals/" + r.ID, "retry the call with exactly the same arguments",
		"allows one call", r.Expires.UTC().Format(time.RFC3339), `delete\u202e_thread\u000a on mail (deletes mail\u001b[31m)`} {
		if !strings.Contains(text, want) {
			t.Errorf("RetryText does not say %q:\n%s", want, text)
		}
	}
	for _, leak := range []string{"Jane", "sk-live", "\x1b", "\n"} {
		if strings.Contains(text, leak) {
			t.Errorf("RetryText carries %q", leak)
		}
	}
	if _, err := approval.RetryText("http://u:p@h", r); err == nil {
		t.Error("RetryText accepted a page address with credentials")
	}
}

func TestOutcomeText(t *testing.T) {
	t.Parallel()
	base := approval.Request{Key: approval.Key{Server: "files", Tool: "manage_files"}}
	decided := time.Date(2026, 11, 3, 10, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		state   approval.State
		decided time.Time
		want    string
	}{
		{approval.Denied, decided, "was denied on the approval page at 2026-11-03T10:04:05Z"},
		{approval.Expired, time.Time{}, "was not decided in time"},
		{approval.Expired, decided, "the approval lapsed before the call was retried"},
		{approval.Used, decided, "that approval was used"},
		{approval.Pending, time.Time{}, "still waiting"},
	} {
		r := base
		r.State, r.Decided = tc.state, tc.decided
		text := approval.OutcomeText(&r)
		if !strings.Contains(text, tc.want) || !strings.Contains(text, "manage_files on files") || !strings.HasSuffix(text, "The server was not called.") {
			t.Errorf("%s: %q", tc.state, text)
		}
	}
}

// FuzzLink: Link never panics, and what it returns is an http(s) URL
// under base ending in the id.
func FuzzLink(f *testing.F) {
	f.Add("http://127.0.0.1:8787", "AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("https://h/p?", "x")
	f.Fuzz(func(t *testing.T, base, id string) {
		got, err := approval.Link(base, id)
		if err != nil {
			return
		}
		u, perr := url.Parse(got)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.RawQuery != "" || !strings.HasSuffix(u.Path, "/approvals/"+id) {
			t.Fatalf("Link(%q, %q) = %q", base, id, got)
		}
	})
}
