package page_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/preflightmcp/preflight/gateway/approval"
	"github.com/preflightmcp/preflight/gateway/audit"
	"github.com/preflightmcp/preflight/gateway/page"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/chromium"
)

// ArtifactsEnv names the directory where the browser tests keep their
// screenshots; unset, they go to the test's temporary directory.
const ArtifactsEnv = "PREFLIGHT_TEST_ARTIFACTS"

// bound limits each wait of the browser tests; it is a limit to fail by,
// never a synchronization.
const bound = 60 * time.Second

// artifacts returns the directory for this test's screenshots.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if base := os.Getenv(ArtifactsEnv); base != "" {
		dir = filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// headless starts the system Chromium (internal/chromium finds it) with
// the flags the repository's other browser tests use, and returns a tab
// whose console errors, CSP violations and uncaught exceptions are
// collected by problems.
func headless(t *testing.T) (ctx context.Context, problems func() []string) {
	t.Helper()
	bin, err := chromium.Find()
	if err != nil {
		t.Fatalf("Chromium is required to test the page in a browser: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tctx, chromium.Timeout+bound)
	t.Cleanup(cancel)

	var mu sync.Mutex
	var seen []string
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceSecurity {
				seen = append(seen, fmt.Sprintf("%s %s: %s (%s)", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		case *runtime.EventExceptionThrown:
			seen = append(seen, "exception: "+e.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func do(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

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
	dir := artifacts(t)
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
	waitCtx, cancelWait := context.WithTimeout(t.Context(), bound)
	defer cancelWait()
	released := make(chan *approval.Request, 1)
	go func() {
		r, err := f.approvals.Wait(waitCtx, req.ID)
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
		released <- r
	}()

	ctx, problems := headless(t)
	link, err := f.login.NewLink(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the login link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("signin")))
	screenshot(t, ctx, dir, "01-sign-in")
	do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+req.ID)))
	if who := text(t, ctx, "#who"); who != "Alice" {
		t.Errorf("signed in as %q", who)
	}
	if args := text(t, ctx, "#req-"+req.ID+" dl.args"); !strings.Contains(args, "reports/q3.csv") || strings.Contains(args, "sk-live") {
		t.Errorf("arguments shown: %q", args)
	}
	screenshot(t, ctx, dir, "02-pending")
	select {
	case r := <-released:
		t.Fatalf("the call was released before anyone approved it: %+v", r)
	default:
	}

	do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+req.ID+`"]`)), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st := text(t, ctx, "#state"); st != "approved" {
		t.Errorf("state after the click: %q", st)
	}
	screenshot(t, ctx, dir, "03-approved")
	select {
	case r := <-released:
		if r == nil || r.State != approval.Approved || r.DecidedBy != (approval.Approver{Principal: "alice", Name: "Alice"}) {
			t.Fatalf("Wait returned %+v", r)
		}
	case <-time.After(bound):
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

	do(t, ctx, "front page", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("none-pending")))
	const markup = `drop_table<img src=x onerror=alert(1)>`
	second, err := f.approvals.Ask(t.Context(), approval.Call{Principal: "alice", Server: "db", Tool: markup,
		Arguments: []byte(`{"table":"users","note":"<script>alert(2)</script>"}`), Effect: hints.EffectDelete, Reason: "drops a table"})
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "the new call appears without a reload", chromedp.WaitVisible(chromedp.CSS("#req-"+second.ID)))
	if name := text(t, ctx, "#req-"+second.ID+" .tool"); name != markup {
		t.Errorf("tool name shown as %q, want the text %q", name, markup)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script").length`)); err != nil || n != 0 {
		t.Errorf("server text became %d elements (%v)", n, err)
	}
	screenshot(t, ctx, dir, "04-new-call")
	do(t, ctx, "deny", chromedp.Click(chromedp.CSS(`button[data-deny="`+second.ID+`"]`)), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st := text(t, ctx, "#state"); st != "denied" {
		t.Errorf("state after deny: %q", st)
	}
	if r, _ := f.approvals.Get(t.Context(), second.ID, "alice"); r.State != approval.Denied || r.DecidedBy.String() != "Alice" {
		t.Errorf("denied request: %+v", r)
	}
	screenshot(t, ctx, dir, "05-denied")

	for _, pg := range []struct{ path, sel, name string }{
		{"/", "#chart", "06-dashboard-chart"},
		{"/approvals", "table.grid", "07-approvals"},
		{"/audit?effect=delete", "#records", "08-audit-deletes"},
		{"/tools", "table.tools", "09-tools"},
		{"/pins", "#pins", "10-pins"},
	} {
		do(t, ctx, pg.path, chromedp.Navigate(f.srv.URL+pg.path), chromedp.WaitVisible(chromedp.CSS(pg.sel)))
		screenshot(t, ctx, dir, pg.name)
	}
	if rows := text(t, ctx, "#pins"); !strings.Contains(rows, "quarantined") || !strings.Contains(rows, "destructiveHint: true -> false") {
		t.Errorf("pins page: %q", rows)
	}
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
