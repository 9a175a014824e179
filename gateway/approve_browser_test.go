package gateway_test

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
	"github.com/preflightmcp/preflight/internal/chromium"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// artifactsEnv names the directory where browser tests keep their
// screenshots; unset, they go to the test's temporary directory.
const artifactsEnv = "PREFLIGHT_TEST_ARTIFACTS"

// browserBound limits each wait of a browser test; it is a limit to fail
// by, never a synchronization.
const browserBound = 60 * time.Second

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if base := os.Getenv(artifactsEnv); base != "" {
		dir = filepath.Join(base, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// headlessTab starts the system Chromium and returns a tab whose console
// errors, CSP violations and exceptions problems collects.
func headlessTab(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	bin, err := chromium.Find()
	if err != nil {
		t.Fatalf("Chromium is required to drive the page: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tctx, chromium.Timeout+browserBound)
	t.Cleanup(cancel)
	var mu sync.Mutex
	var seen []string
	if err := chromedp.Listen(ctx, func(ev any) {
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
	}); err != nil {
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

func browse(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserApprovesCallThroughGateway is the whole loop on the wire: a
// client that cannot be asked calls a delete through the gateway and is
// told where to approve it (the upstream is untouched: the file is still
// there); headless Chromium opens the login link the gateway's operator
// would be given, signs in, opens the link the client was given, and
// approves; the client's retry runs the delete, once (a second retry asks
// again, and the upstream is not called again). The page's tools view
// shows the upstream's safety table from the gateway's catalog.
func TestBrowserApprovesCallThroughGateway(t *testing.T) {
	dir := artifactsDir(t)
	ag := newApprovalGateway(t, approvalSetup{})
	peer := wiretest.Stateless(ag.url, nil)
	id := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", deleteNotes)))
	if ag.up.toolCalls() != 0 || !ag.up.exists("notes.txt") {
		t.Fatal("the upstream was called before anyone approved")
	}
	link, err := approval.Link(ag.g.PageURL(), id)
	if err != nil {
		t.Fatal(err)
	}

	ctx, problems := headlessTab(t)
	login, err := ag.login.NewLink(ag.g.PageURL())
	if err != nil {
		t.Fatal(err)
	}
	browse(t, ctx, "open the login link", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("signin")))
	shoot(t, ctx, dir, "01-sign-in")
	browse(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+id)))
	shoot(t, ctx, dir, "02-pending")
	browse(t, ctx, "open the client's link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("state")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "pending" {
		t.Fatalf("state on the request's page: %q %v", st, err)
	}
	if args, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#req-"+id+" dl.args"))); err != nil || !strings.Contains(args, "notes.txt") {
		t.Errorf("arguments shown: %q %v", args, err)
	}
	shoot(t, ctx, dir, "03-request")
	if ag.up.toolCalls() != 0 {
		t.Fatal("the upstream was called while the page was open")
	}
	browse(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#state.approved")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "approved" {
		t.Fatalf("state after the click: %q %v", st, err)
	}
	shoot(t, ctx, dir, "04-approved")

	ran := peer.Call(t, "tools/call", deleteNotes)
	if ran.Error != nil || ran.Result["isError"] == true || !strings.Contains(wiretest.MustJSON(ran.Result), "deleted: notes.txt") {
		t.Fatalf("the retry after the approval: %s", ran.Raw)
	}
	if ag.up.exists("notes.txt") || ag.up.toolCalls() != 1 {
		t.Fatalf("the approved call: file there %v, upstream calls %d", ag.up.exists("notes.txt"), ag.up.toolCalls())
	}
	if again := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", deleteNotes))); again == id || ag.up.toolCalls() != 1 {
		t.Fatal("a second retry ran the call again")
	}
	browse(t, ctx, "the request after the call", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "used" {
		t.Errorf("state after the retry: %q %v", st, err)
	}
	shoot(t, ctx, dir, "05-used")
	browse(t, ctx, "tools", chromedp.Navigate(ag.g.PageURL()+"/tools"), chromedp.WaitVisible(chromedp.CSS("table.tools")))
	if tools, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("table.tools"))); err != nil || !strings.Contains(tools, "manage_files") {
		t.Errorf("tools page: %q %v", tools, err)
	}
	shoot(t, ctx, dir, "06-tools")
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
