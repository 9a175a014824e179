//go:build integration

package page_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/hints"
)

// seedAudit writes a day of calls of every effect and decision.
func seedAudit(f *fixture) {
	now := time.Now()
	mix := []struct {
		tool   string
		effect hints.Effect
		d      audit.Decision
	}{
		{"read_text_file", hints.EffectRead, audit.Allow}, {"list_directory", hints.EffectRead, audit.Allow},
		{"write_file", hints.EffectWrite, audit.Allow}, {"send_email", hints.EffectExternal, audit.Confirm},
		{"delete_file", hints.EffectDelete, audit.Confirm}, {"drop_table", hints.EffectDelete, audit.Deny},
	}
	for i := range 120 {
		m := mix[i%len(mix)]
		if i%4 == 1 {
			m = mix[0] // reads dominate
		}
		f.record("alice", m.tool, m.effect, m.d, now.Add(-time.Duration(i*11)*time.Minute))
	}
}

// TestBrowserApprovalReleasesWaitingCall drives the page in headless
// Chromium: sign in through the printed link, see the pending call, click
// Approve, and the call waiting on Wait returns approved; its retry runs
// once. A call asked while the page is open appears without a reload (the
// nonce'd script runs under the CSP) with its markup shown as text, and is
// denied by a click. The audit log, tools and pins pages draw. No CSP
// violation, console error or script exception happens on the way.
func TestBrowserApprovalReleasesWaitingCall(t *testing.T) {
	dir := browsertest.Artifacts(t)
	f := newFixture(t, &fixtureOptions{identity: &page.Identity{Principal: "alice", Name: "Alice"},
		opts: page.Options{Refresh: 200 * time.Millisecond}})
	seedAudit(f)
	call := approval.Call{Principal: "alice", Server: "files", Tool: "delete_file",
		Arguments: []byte(`{"path":"reports/q3.csv","recursive":false,"api_token":"sk-live-1234"}`),
		Effect:    hints.EffectDelete, Reason: "deletes a file (rule: deletes need a person)", Matter: []string{"path"}}
	req, err := f.approvals.Ask(t.Context(), call)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancelWait := context.WithTimeout(t.Context(), browsertest.Bound)
	defer cancelWait()
	released := make(chan *approval.Request, 1)
	go func() {
		r, err := f.approvals.Wait(waitCtx, req.ID)
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
		released <- r
	}()

	ctx, problems := browsertest.Tab(t)
	link, err := f.login.NewLink(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "open the login link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("signin")))
	browsertest.Screenshot(t, ctx, dir, "01-sign-in")
	browsertest.Do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+req.ID)))
	if who := browsertest.Text(t, ctx, "#who"); who != "Alice" {
		t.Errorf("signed in as %q", who)
	}
	if args := browsertest.Text(t, ctx, "#req-"+req.ID+" dl.args"); !strings.Contains(args, "reports/q3.csv") || strings.Contains(args, "sk-live") {
		t.Errorf("arguments shown: %q", args)
	}
	browsertest.Screenshot(t, ctx, dir, "02-pending")
	select {
	case r := <-released:
		t.Fatalf("the call was released before anyone approved it: %+v", r)
	default:
	}

	browsertest.Do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+req.ID+`"]`)), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st := browsertest.Text(t, ctx, "#state"); st != "approved" {
		t.Errorf("state after the click: %q", st)
	}
	browsertest.Screenshot(t, ctx, dir, "03-approved")
	select {
	case r := <-released:
		if r == nil || r.State != approval.Approved || r.DecidedBy != (approval.Approver{Principal: "alice", Name: "Alice"}) {
			t.Fatalf("Wait returned %+v", r)
		}
	case <-time.After(browsertest.Bound):
		t.Fatal("the waiting call was not released by the approval")
	}
	if r, err := f.approvals.Ask(t.Context(), call); err != nil || r.State != approval.Used {
		t.Errorf("the retry: %+v, %v; want used", r, err)
	}
	if r, err := f.approvals.Ask(t.Context(), call); err != nil || r.State != approval.Pending {
		t.Errorf("a second retry: %+v, %v; want a new pending request", r, err)
	} else if _, err := f.approvals.Deny(t.Context(), r.ID, approval.Approver{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}

	browsertest.Do(t, ctx, "front page", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("none-pending")))
	const markup = `drop_table<img src=x onerror=alert(1)>`
	second, err := f.approvals.Ask(t.Context(), approval.Call{Principal: "alice", Server: "db", Tool: markup,
		Arguments: []byte(`{"table":"users","note":"<script>alert(2)</script>"}`), Effect: hints.EffectDelete, Reason: "drops a table"})
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "the new call appears without a reload", chromedp.WaitVisible(chromedp.CSS("#req-"+second.ID)))
	if name := browsertest.Text(t, ctx, "#req-"+second.ID+" .tool"); name != markup {
		t.Errorf("tool name shown as %q, want the text %q", name, markup)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script").length`)); err != nil || n != 0 {
		t.Errorf("server text became %d elements (%v)", n, err)
	}
	browsertest.Screenshot(t, ctx, dir, "04-new-call")
	browsertest.Do(t, ctx, "deny", chromedp.Click(chromedp.CSS(`button[data-deny="`+second.ID+`"]`)), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st := browsertest.Text(t, ctx, "#state"); st != "denied" {
		t.Errorf("state after deny: %q", st)
	}
	if r, _ := f.approvals.Get(t.Context(), second.ID, "alice"); r.State != approval.Denied || r.DecidedBy.String() != "Alice" {
		t.Errorf("denied request: %+v", r)
	}
	browsertest.Screenshot(t, ctx, dir, "05-denied")

	for _, pg := range []struct{ path, sel, name string }{
		{"/", "#chart", "06-dashboard-chart"},
		{"/approvals", "table.grid", "07-approvals"},
		{"/audit?effect=delete", "#records", "08-audit-deletes"},
		{"/tools", "table.tools", "09-tools"},
		{"/pins", "#pins", "10-pins"},
	} {
		browsertest.Do(t, ctx, pg.path, chromedp.Navigate(f.srv.URL+pg.path), chromedp.WaitVisible(chromedp.CSS(pg.sel)))
		browsertest.Screenshot(t, ctx, dir, pg.name)
	}
	if rows := browsertest.Text(t, ctx, "#pins"); !strings.Contains(rows, "quarantined") || !strings.Contains(rows, "destructiveHint: true -> false") {
		t.Errorf("pins page: %q", rows)
	}
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
