//go:build integration

package gateway_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestBrowserApprovesCallThroughGateway is the whole loop on the wire: a
// client that cannot be asked calls a delete through the gateway and is
// told where to approve it (the upstream is untouched: the file is still
// there); headless Chromium opens the login link the gateway's operator
// would be given, signs in, opens the link the client was given, and
// approves; the client's retry runs the delete, once (a second retry asks
// again, and the upstream is not called again). The page's tools view
// shows the upstream's safety table from the gateway's catalog.
func TestBrowserApprovesCallThroughGateway(t *testing.T) {
	dir := browsertest.Artifacts(t)
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

	ctx, problems := browsertest.Tab(t)
	login, err := ag.login.NewLink(ag.g.PageURL())
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "open the login link", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("signin")))
	browsertest.Screenshot(t, ctx, dir, "01-sign-in")
	browsertest.Do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+id)))
	browsertest.Screenshot(t, ctx, dir, "02-pending")
	browsertest.Do(t, ctx, "open the client's link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("state")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "pending" {
		t.Fatalf("state on the request's page: %q %v", st, err)
	}
	if args, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#req-"+id+" dl.args"))); err != nil || !strings.Contains(args, "notes.txt") {
		t.Errorf("arguments shown: %q %v", args, err)
	}
	browsertest.Screenshot(t, ctx, dir, "03-request")
	if ag.up.toolCalls() != 0 {
		t.Fatal("the upstream was called while the page was open")
	}
	browsertest.Do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#state.approved")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "approved" {
		t.Fatalf("state after the click: %q %v", st, err)
	}
	browsertest.Screenshot(t, ctx, dir, "04-approved")

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
	browsertest.Do(t, ctx, "the request after the call", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("outcome")))
	if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "used" {
		t.Errorf("state after the retry: %q %v", st, err)
	}
	browsertest.Screenshot(t, ctx, dir, "05-used")
	browsertest.Do(t, ctx, "tools", chromedp.Navigate(ag.g.PageURL()+"/tools"), chromedp.WaitVisible(chromedp.CSS("table.tools")))
	if tools, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("table.tools"))); err != nil || !strings.Contains(tools, "manage_files") {
		t.Errorf("tools page: %q %v", tools, err)
	}
	browsertest.Screenshot(t, ctx, dir, "06-tools")
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
