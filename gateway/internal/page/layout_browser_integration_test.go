//go:build integration

package page_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

// widths are the viewport widths every view is checked at: a phone and a
// laptop.
var widths = []int64{390, 1280}

// viewport makes the tab a viewport w px wide (a phone's, honouring the
// page's meta viewport, below 600 px).
func viewport(t *testing.T, ctx context.Context, w int64) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	h := int64(900)
	if w < 600 {
		opts, h = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait), 844
	}
	browsertest.Do(t, ctx, fmt.Sprintf("viewport %d px", w), chromedp.EmulateViewport(w, h, opts...))
}

// layout is what a view measures in the browser.
type layout struct {
	ScrollWidth  int      `json:"scrollWidth"`
	InnerWidth   int      `json:"innerWidth"`
	ScrollHeight int      `json:"scrollHeight"`
	Wide         []string `json:"wide"`     // elements past the right edge, outside any scroller
	Scrolled     []string `json:"scrolled"` // boxes whose content scrolls sideways within them
}

// measureJS measures the document and names the elements that stick out
// of the viewport (not counting those inside a box that scrolls or clips
// them).
const measureJS = `(() => {
  const de = document.documentElement, vw = window.innerWidth, wide = [];
  const clipped = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o !== "visible") return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5 && !clipped(el)) {
      const cls = typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).join(".") : "";
      wide.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + cls + " to " + Math.round(r.right) + "px");
    }
  }
  const scrolled = Array.from(document.querySelectorAll(".scroll")).filter(el => el.scrollWidth > el.clientWidth + 1)
    .map(el => (el.firstElementChild ? el.firstElementChild.tagName.toLowerCase() + "." + el.firstElementChild.className.split(" ").join(".") : "?") + " " + el.scrollWidth + "/" + el.clientWidth + "px");
  return {scrollWidth: de.scrollWidth, innerWidth: vw, scrollHeight: de.scrollHeight, wide: wide.slice(0, 6), scrolled: scrolled};
})()`

func measure(t *testing.T, ctx context.Context) layout {
	t.Helper()
	l, err := chromedp.Run(ctx, chromedp.Evaluate[layout](measureJS))
	if err != nil {
		t.Fatalf("measure: %v", err)
	}
	return l
}

// checkFits fails the test when the document is wider than the viewport
// at width w.
func checkFits(t *testing.T, ctx context.Context, view string, w int64) layout {
	t.Helper()
	l := measure(t, ctx)
	t.Logf("%s at %d px: document %d px wide in a %d px viewport, %d px tall", view, w, l.ScrollWidth, l.InnerWidth, l.ScrollHeight)
	if len(l.Scrolled) > 0 {
		t.Logf("%s at %d px: scrolling within their own boxes: %s", view, w, strings.Join(l.Scrolled, ", "))
	}
	if l.InnerWidth != int(w) || l.ScrollWidth > l.InnerWidth {
		t.Errorf("%s at %d px: document.documentElement.scrollWidth %d > window.innerWidth %d; sticking out: %s",
			view, w, l.ScrollWidth, l.InnerWidth, strings.Join(l.Wide, ", "))
	}
	return l
}

// catalogHead gives the first n tools of a catalog in the repository's
// testdata as the page's one safety table.
type catalogHead struct {
	file string
	n    int
}

func (c catalogHead) SafetyTables(context.Context) ([]*safety.Table, error) {
	target, err := lint.ReadCatalog(filepath.Join("..", "..", "..", "testdata", "catalogs", c.file))
	if err != nil {
		return nil, err
	}
	tb := safety.FromTarget(target)
	tb.Tools = tb.Tools[:min(c.n, len(tb.Tools))]
	return []*safety.Table{tb}, nil
}

// github40 is the 40-tool catalog the tools page is measured with: the
// first 40 tools of the GitHub server's default toolsets.
var github40 = catalogHead{file: "github-default.json", n: 40}

// Long values a page must wrap or scroll within their own box.
const (
	longPath = "projects/2026/quarterly-reports/finance/departments/engineering/infrastructure/kubernetes-clusters/" +
		"eu-west-1/namespaces/payments-production/deployments/ledger-reconciliation-worker/config/overrides.yaml"
	longURL = "https://storage.example.com/buckets/preflight-audit-exports/objects/2026-11-05T12:34:56Z/" +
		"export-0000000000000000000000000000000000000000000000000000000000000000.jsonl.gz?X-Signature=abcdefghijklmnopqrstuvwxyz0123456789"
)

// seedLayout fills the fixture with what stretches a page: a pending
// delete with long arguments, a denied request, and full audit records
// with long arguments, reasons and errors.
func seedLayout(t *testing.T, f *fixture) (pending, denied *approval.Request) {
	t.Helper()
	ctx := context.Background()
	args, _ := json.Marshal(map[string]any{"action": "delete", "path": longPath, "source": longURL,
		"options": map[string]any{"recursive": true, "keep": []string{"a", "b", "c"}, "note": strings.Repeat("x", 120)}})
	var err error
	pending, err = f.approvals.Ask(ctx, approval.Call{Principal: "alice", Server: "files", Tool: "manage_files", Arguments: args,
		Effect: hints.EffectDelete, Reason: "the call deletes (effect delete, from the tool's declaration)", Matter: []string{"action"}})
	if err != nil {
		t.Fatal(err)
	}
	denied, err = f.approvals.Ask(ctx, approval.Call{Principal: "alice", Server: "github", Tool: "delete_file",
		Arguments: []byte(`{"owner":"octo","repo":"hello-world","path":"README.md","branch":"main"}`), Effect: hints.EffectDelete,
		Reason: "the call is destructive (destructiveHint, from the tool's declaration)", Matter: []string{"path"}})
	if err != nil {
		t.Fatal(err)
	}
	if denied, err = f.approvals.Deny(ctx, denied.ID, approval.Approver{Principal: "alice", Name: "Alice"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var recs []*audit.Record
	for i, r := range []struct {
		tool   string
		effect hints.Effect
		d      audit.Decision
		reason string
		args   string
		errMsg string
	}{
		{"manage_files", hints.EffectDelete, audit.Confirm, "the call deletes (effect delete, from the tool's declaration)", string(args), ""},
		{"read_text_file", hints.EffectRead, audit.Allow, "the call only reads", `{"path":"` + longPath + `"}`, ""},
		{"fetch", hints.EffectExternal, audit.Allow, "the call acts outside this system but does not delete or destroy anything", `{"url":"` + longURL + `"}`, "upstream: " + longURL + " answered 503"},
		{"drop_table", hints.EffectDelete, audit.Deny, `the decision rule "no-drops" could not be evaluated (no such key: table); read optional arguments with has(args.x)`, `{"table":"users"}`, ""},
		{"write_file", hints.EffectWrite, audit.Confirm, "the call requires confirmation (requiresConfirmation, from the tool's declaration)", `{"path":"notes.txt","content":"` + strings.Repeat("lorem ipsum ", 40) + `"}`, ""},
	} {
		at := now.Add(-time.Duration(i+1) * 7 * time.Minute)
		recs = append(recs, &audit.Record{Time: at, Principal: "alice", Server: "files", Tool: r.tool, Effect: r.effect,
			Destructive: r.effect == hints.EffectDelete, Decision: r.d, Reason: r.reason, Level: audit.LevelFull,
			ArgsDigest: "digest-" + r.tool, Args: json.RawMessage(r.args), Outcome: audit.OutcomeOK, Error: r.errMsg,
			Ended: at.Add(12 * time.Millisecond), Latency: 12 * time.Millisecond, Approver: map[bool]string{true: "Alice"}[r.d == audit.Confirm]})
	}
	if err := f.audit.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return pending, denied
}

// TestBrowserLayoutFitsPhoneAndLaptop opens every view of the page at
// 390 px and 1280 px in headless Chromium: the document is never wider
// than the viewport (long arguments, paths and URLs wrap or scroll in
// their own boxes), Sign out stays on screen, and a screenshot of each
// view at each width is kept.
func TestBrowserLayoutFitsPhoneAndLaptop(t *testing.T) {
	dir := browsertest.Artifacts(t)
	f := newFixture(t, &fixtureOptions{identity: &page.Identity{Principal: "alice", Name: "Alice", Admin: true},
		safety: github40, opts: page.Options{Refresh: -1}})
	seedAudit(f)
	pending, denied := seedLayout(t, f)
	// The credential sign-in form is another Authenticator's page.
	cred, err := page.New(page.NewCredentialLogin(&page.CredentialLoginOptions{
		Verify: func(context.Context, string) (page.Identity, error) { return page.Identity{}, fmt.Errorf("no") },
		Hint:   "Ask your administrator for a token: " + longURL}), nil)
	if err != nil {
		t.Fatal(err)
	}
	credSrv := httptest.NewServer(cred)
	defer credSrv.Close()

	ctx, problems := browsertest.Tab(t)
	views := []struct{ name, path, wait string }{
		{"pending", "/", "#pending"},
		{"approvals", "/approvals", "main h1"},
		{"request-pending", "/approvals/" + pending.ID, "#outcome"},
		{"request-denied", "/approvals/" + denied.ID, "#outcome"},
		{"audit", "/audit", "#records"},
		{"tools", "/tools", "table.tools"},
		{"pins", "/pins", "#pins"},
		{"not-found", "/approvals/AAAAAAAAAAAAAAAAAAAAAA", "#error"},
	}
	// Screenshots at the two widths; between them, the widths of a
	// small tablet and a large one are checked too.
	shots := map[int64]bool{}
	for _, w := range widths {
		shots[w] = true
	}
	for _, w := range []int64{390, 768, 1024, 1280} {
		viewport(t, ctx, w)
		shot := func(name string) {
			if shots[w] {
				browsertest.Screenshot(t, ctx, dir, fmt.Sprintf("%s-%d", name, w))
			}
		}
		link, err := f.login.NewLink(f.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		browsertest.Do(t, ctx, "open the login link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("signin")))
		checkFits(t, ctx, "login", w)
		shot("login")
		browsertest.Do(t, ctx, "sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("pending")))
		for _, v := range views {
			browsertest.Do(t, ctx, v.name, chromedp.Navigate(f.srv.URL+v.path), chromedp.WaitVisible(chromedp.CSS(v.wait)))
			checkFits(t, ctx, v.name, w)
			shot(v.name)
		}
		// Sign out is on screen and works.
		right, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("#signout").getBoundingClientRect().right`))
		if err != nil || right > float64(w) {
			t.Errorf("at %d px Sign out ends at %v px (%v)", w, right, err)
		}
		browsertest.Do(t, ctx, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signed-out")))
		checkFits(t, ctx, "signed-out", w)
		shot("signed-out")
		browsertest.Do(t, ctx, "credential form", chromedp.Navigate(credSrv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("credential")))
		checkFits(t, ctx, "credential-login", w)
		shot("credential-login")
	}
	for _, p := range problems() {
		if !strings.Contains(p, "404 (Not Found)") { // the not-found view's own status
			t.Errorf("browser reported: %s", p)
		}
	}
}
