package page_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/hints"
)

// fixedApprovals are requests in every state, as a store would return
// them at the time of the test.
type fixedApprovals struct{ list []*approval.Request }

func (f fixedApprovals) List(context.Context, string, int) ([]*approval.Request, error) {
	return f.list, nil
}

func (f fixedApprovals) Get(_ context.Context, id, _ string) (*approval.Request, error) {
	for _, r := range f.list {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, approval.ErrNotFound
}

func (fixedApprovals) Approve(context.Context, string, approval.Approver) (*approval.Request, error) {
	return nil, approval.ErrNotPending
}

func (fixedApprovals) Deny(context.Context, string, approval.Approver) (*approval.Request, error) {
	return nil, approval.ErrNotPending
}

func (fixedApprovals) MayDecide(string, *approval.Request) bool { return true }

// countdownRE matches a countdown: "lapses in 9m", "in 4m", "in 30s".
var countdownRE = regexp.MustCompile(`lapses|\bin \d+[smhd]\b`)

// TestPageDecidedRequestSaysWhen: a pending request says when it lapses; a
// decided one (approved, used, denied, expired with or without an
// approval) says its state, who decided and when, on its own page and in
// the list of requests, and never counts down.
func TestPageDecidedRequestSaysWhen(t *testing.T) {
	t.Parallel()
	now := time.Now()
	alice := approval.Approver{Principal: "alice", Name: "Alice"}
	req := func(id string, st approval.State, created, expires, decided, used time.Time) *approval.Request {
		r := &approval.Request{ID: id, Key: approval.Key{Principal: "alice", Server: "files", Tool: "manage_files", ArgsDigest: "digest-" + id},
			Effect: hints.EffectDelete, Reason: "the call deletes (effect delete, from the tool's declaration)",
			Args: []approval.Arg{{Name: "path", Value: "notes.txt"}}, State: st, Created: created, Expires: expires, Decided: decided, UsedAt: used}
		if !decided.IsZero() {
			r.DecidedBy = alice
		}
		return r
	}
	var zero time.Time
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	list := []*approval.Request{
		req("pending", approval.Pending, ago(time.Minute), now.Add(9*time.Minute+30*time.Second), zero, zero),
		req("approved", approval.Approved, ago(2*time.Minute), now.Add(4*time.Minute), ago(time.Minute), zero),
		req("used", approval.Used, ago(3*time.Minute), now.Add(3*time.Minute), ago(2*time.Minute), ago(time.Minute)),
		req("denied", approval.Denied, ago(time.Minute), now.Add(9*time.Minute), ago(30*time.Second), zero),
		req("expired", approval.Expired, ago(20*time.Minute), ago(10*time.Minute), zero, zero),
		req("lapsed", approval.Expired, ago(20*time.Minute), ago(5*time.Minute), ago(15*time.Minute), zero),
	}
	login := page.NewTokenLogin(&page.TokenLoginOptions{Identity: &page.Identity{Principal: "alice", Name: "Alice"}})
	h, err := page.New(login, &page.Options{Approvals: fixedApprovals{list}, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := (&fixture{t: t, srv: srv, login: login}).browser()
	b.signIn()

	want := map[string][]string{
		"pending":  {"waiting; lapses <time", ">in 9m</time>"},
		"approved": {"approved by <b>Alice</b> <time", ">1m ago</time>", "Approved by <b>Alice</b> at "},
		"used":     {"approved by <b>Alice</b> <time", ">2m ago</time>", "ran <time", ">1m ago</time>"},
		"denied":   {"denied by <b>Alice</b> <time", ">30s ago</time>", "Denied by <b>Alice</b> at "},
		"expired":  {"expired <time", ">10m ago</time>", "without a decision", "Expired at "},
		"lapsed":   {"approved by <b>Alice</b> <time", ">15m ago</time>", "expired unused <time", ">5m ago</time>", "not used before it expired at"},
	}
	for _, q := range list {
		r := b.get("/approvals/" + q.ID)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d", q.ID, r.status)
		}
		meta := between(t, r.body, `class="muted meta"`, "</div>")
		for _, w := range want[q.ID] {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s request's page lacks %q; its line reads %q", q.ID, w, text(meta))
			}
		}
		if !strings.Contains(r.body, `id="state">`+string(q.State)+"<") {
			t.Errorf("%s request's page does not say %s", q.ID, q.State)
		}
		if q.State != approval.Pending {
			if m := countdownRE.FindString(text(meta)); m != "" {
				t.Errorf("the %s request counts down (%q): %q", q.ID, m, text(meta))
			}
			if head := between(t, r.body, `<div class="head">`, "</div>"); !strings.Contains(head, `<span class="state `+string(q.State)+`">`+string(q.State)+"</span>") {
				t.Errorf("the %s request's card does not say its state: %q", q.ID, head)
			}
		}
	}
	r := b.get("/approvals")
	rows := strings.Split(between(t, r.body, "<tbody>", "</tbody>"), "</tr>")
	for _, q := range list {
		var row string
		for _, s := range rows {
			if strings.Contains(s, "/approvals/"+q.ID+`"`) {
				row = s
			}
		}
		if row == "" {
			t.Fatalf("the list has no row for %s", q.ID)
		}
		if q.State != approval.Pending && countdownRE.MatchString(text(row)) {
			t.Errorf("the list counts down for the %s request: %q", q.ID, text(row))
		}
		if w := want[q.ID][0]; !strings.Contains(row, w) {
			t.Errorf("the list's row of %s lacks %q: %q", q.ID, w, text(row))
		}
	}
}

// TestPageReasonsInWords: a request's card and the audit log say why in a
// plain sentence that names what the call acts on, with the gateway's own
// reason in a smaller line beneath.
func TestPageReasonsInWords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	b := f.browser()
	b.signIn()
	q, err := f.approvals.Ask(context.Background(), approval.Call{Server: "files", Tool: "manage_files",
		Arguments: []byte(`{"action":"delete","path":"notes.txt"}`), Effect: hints.EffectDelete,
		Reason: "the call requires confirmation (requiresConfirmation, from the tool's declaration)", Matter: []string{"action"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/approvals/" + q.ID, "/fragments/pending"} {
		r := b.get(p)
		if !strings.Contains(r.body, `<p class="reason">Asks first: the tool wants a person to confirm this call on notes.txt.</p>`) ||
			!strings.Contains(r.body, `<p class="tech"><span class="vh">The gateway's reason: </span>the call requires confirmation (requiresConfirmation, from the tool&#39;s declaration)</p>`) {
			t.Errorf("%s: no plain reason with the technical one beneath:\n%s", p, between(t, r.body, `id="req-`+q.ID, "</li>"))
		}
	}
	at := time.Now().Add(-time.Minute)
	if err := f.audit.Write(context.Background(), []*audit.Record{{Time: at, Server: "files", Tool: "manage_files",
		Effect: hints.EffectDelete, Decision: audit.Confirm, Reason: "the call deletes (effect delete, from this call's resolution)",
		Level: audit.LevelFull, ArgsDigest: "d", Args: json.RawMessage(`{"action":"delete","path":"old.txt"}`), Outcome: audit.OutcomeOK,
		Approver: "operator", Ended: at, Latency: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	r := b.get("/audit")
	if !strings.Contains(r.body, `<div class="why">Asks first: this call deletes old.txt.</div>`) ||
		!strings.Contains(r.body, `the call deletes (effect delete, from this call&#39;s resolution)</div>`) {
		t.Errorf("audit log: no plain reason:\n%s", between(t, r.body, `id="records"`, "</table>"))
	}
}

// between returns the text of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", from, s)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// text is HTML's text, tags dropped and spaces collapsed.
func text(h string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(h, ""))), " ")
}
