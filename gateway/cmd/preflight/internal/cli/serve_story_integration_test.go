//go:build integration

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestServeApprovalStory is what a person sees on the first run of
// "preflight serve" on the built-in setup, on the wire, for a client of
// each era that cannot be asked in band (it declares no elicitation): a
// read runs; a delete is not run but answered with a tool error that
// gives the approval link and says to retry (the file is still there);
// headless Chromium signs in to the page with the login link serve
// printed, opens the client's link and approves; the client's retry with
// the same arguments runs the delete (the file is gone) and a second
// retry is asked anew, not run; and "preflight audit -data DIR" shows the
// read and the delete with their decision, approver and outcome.
func TestServeApprovalStory(t *testing.T) {
	ctx, problems := browsertest.Tab(t)
	read := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}}
	del := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "delete"}}
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			dir := browsertest.Artifacts(t)
			url, data, printed, stderr, stop := startServePrinted(t)
			base := strings.TrimSuffix(url, gateway.MCPPath)
			lm := regexp.MustCompile(`(?m)^  (` + regexp.QuoteMeta(base) + `/ui/login\?token=\S+)$`).FindStringSubmatch(printed)
			if lm == nil || !strings.Contains(printed, "wait for approval at "+base+"/ui/") {
				t.Fatalf("no approval page or login link printed:\n%s", printed)
			}
			notes := filepath.Join(data, "files", "notes.txt")

			peer := wiretest.Stateless(url, nil)
			if era == "2025-11-25" {
				peer = wiretest.Legacy(url, nil)
			}
			defer peer.Close()
			if peer.Version != era {
				t.Fatalf("peer speaks %s, want %s", peer.Version, era)
			}

			// A read runs.
			if r := peer.Call(t, "tools/call", read); r.Error != nil || r.Result["isError"] == true ||
				!strings.Contains(wiretest.MustJSON(r.Result), "Notes kept by the manage_files example") {
				t.Fatalf("read: %s", r.Raw)
			}
			// A delete waits for approval: the client is told where and to
			// retry, and the file is still there.
			text := toolErrorText(t, peer.Call(t, "tools/call", del))
			lk := regexp.MustCompile(`(` + regexp.QuoteMeta(base) + `/ui/approvals/([A-Za-z0-9_-]+))`).FindStringSubmatch(text)
			if lk == nil || !strings.Contains(text, "retry the call with exactly the same arguments") {
				t.Fatalf("the delete's tool error does not say where to approve and to retry: %q", text)
			}
			link, id := lk[1], lk[2]
			if _, err := os.Stat(notes); err != nil {
				t.Fatalf("the delete ran before anyone approved: %v", err)
			}

			// The person at the terminal signs in with the printed link,
			// opens the client's link and approves.
			browsertest.Do(t, ctx, "open the login link", chromedp.Navigate(lm[1]), chromedp.WaitVisible(chromedp.ID("signin")))
			browsertest.Screenshot(t, ctx, dir, "01-sign-in")
			browsertest.Do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.CSS("#req-"+id)))
			browsertest.Screenshot(t, ctx, dir, "02-pending")
			browsertest.Do(t, ctx, "open the client's link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("state")))
			if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "pending" {
				t.Fatalf("state on the request's page: %q %v", st, err)
			}
			if args, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#req-"+id+" dl.args"))); err != nil ||
				!strings.Contains(args, "notes.txt") || !strings.Contains(args, "delete") {
				t.Errorf("arguments shown: %q %v", args, err)
			}
			browsertest.Screenshot(t, ctx, dir, "03-request")
			if _, err := os.Stat(notes); err != nil {
				t.Fatalf("the delete ran while the page was open: %v", err)
			}
			browsertest.Do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`button[data-approve="`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#state.approved")))
			browsertest.Screenshot(t, ctx, dir, "04-approved")

			// The retry with the same arguments runs it, once.
			if r := peer.Call(t, "tools/call", del); r.Error != nil || r.Result["isError"] == true ||
				!strings.Contains(wiretest.MustJSON(r.Result), "deleted: notes.txt") {
				t.Fatalf("the retry after the approval: %s", r.Raw)
			}
			if _, err := os.Stat(notes); !os.IsNotExist(err) {
				t.Fatalf("the approved delete did not delete the file: %v", err)
			}
			again := toolErrorText(t, peer.Call(t, "tools/call", del))
			if m := regexp.MustCompile(`/ui/approvals/([A-Za-z0-9_-]+)`).FindStringSubmatch(again); m == nil || m[1] == id {
				t.Fatalf("a second retry was not asked anew: %q", again)
			}
			browsertest.Do(t, ctx, "the request after the call", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("outcome")))
			if st, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("state"))); err != nil || strings.TrimSpace(st) != "used" {
				t.Errorf("state after the retry: %q %v", st, err)
			}
			browsertest.Screenshot(t, ctx, dir, "05-used")

			peer.Close()
			if code := stop(); code != exitOK {
				t.Fatalf("serve: exit %d\n%s", code, stderr.String())
			}

			// The audit shows the read and the delete: asked, approved by
			// the operator and run once, asked again.
			code, aout, aerr := runMain(t, "audit", "-data", data, "-format", "jsonl")
			if code != exitOK {
				t.Fatalf("audit: exit %d: %s", code, aerr)
			}
			type rec struct {
				Server, Tool, Effect, Decision, Reason, Approver, Outcome string
			}
			want := []rec{
				{Server: "files", Tool: "manage_files", Effect: "read", Decision: "allow", Outcome: "ok"},
				{Server: "files", Tool: "manage_files", Effect: "delete", Decision: "confirm", Outcome: "input_required"},
				{Server: "files", Tool: "manage_files", Effect: "delete", Decision: "confirm", Approver: "operator", Outcome: "ok"},
				{Server: "files", Tool: "manage_files", Effect: "delete", Decision: "confirm", Outcome: "input_required"},
			}
			lines := strings.Split(strings.TrimSpace(aout), "\n")
			if len(lines) != len(want) {
				t.Fatalf("audit: %d records, want %d:\n%s", len(lines), len(want), aout)
			}
			for i, l := range lines {
				var r rec
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatal(err)
				}
				if r.Decision == "confirm" && r.Reason == "" {
					t.Errorf("audit record %d has no reason: %s", i, l)
				}
				r.Reason = ""
				if r != want[i] {
					t.Errorf("audit record %d = %+v, want %+v", i, r, want[i])
				}
			}
			// As a person reads it: one line per call.
			code, text, aerr = runMain(t, "audit", "-data", data)
			if code != exitOK {
				t.Fatalf("audit: exit %d: %s", code, aerr)
			}
			tl := strings.Split(strings.TrimSpace(text), "\n")
			if len(tl) != len(want) || !regexp.MustCompile(`files/manage_files +read +allow +ok `).MatchString(tl[0]) ||
				!regexp.MustCompile(`files/manage_files +delete! +confirm +input_required `).MatchString(tl[1]) ||
				!regexp.MustCompile(`files/manage_files +delete! +confirm +ok .* approver=operator`).MatchString(tl[2]) {
				t.Errorf("audit as text:\n%s", text)
			}
		})
	}
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
