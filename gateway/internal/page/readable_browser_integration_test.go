//go:build integration

package page_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/browsertest"
)

// auditRow is what the audit test measures of one record's row.
type auditRow struct {
	Tool       string  `json:"tool"`
	TimeLines  int     `json:"timeLines"`  // lines the time takes
	TimeText   string  `json:"timeText"`   // the time as shown
	TimeTitle  string  `json:"timeTitle"`  // its tooltip
	ArgsText   string  `json:"argsText"`   // the arguments cell's text, folded parts included
	ArgsRight  float64 `json:"argsRight"`  // the arguments cell's right edge
	ArgsWidth  float64 `json:"argsWidth"`  // its width
	ArgsClips  bool    `json:"argsClips"`  // its content is wider than it
	RowRight   float64 `json:"rowRight"`   // the row's right edge
	RowDisplay string  `json:"rowDisplay"` // table-row, or a card's block or flex
}

// auditRowsJS measures the audit log's rows.
const auditRowsJS = `Array.from(document.querySelectorAll("#records tbody tr")).map(tr => {
  const td = tr.cells, time = td[0], args = td[td.length - 1];
  const range = document.createRange();
  range.selectNodeContents(time);
  const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.bottom)));
  const titled = time.querySelector("[title]");
  const tool = Array.from(td).find(c => c.classList.contains("mono"));
  return {tool: tool ? tool.textContent.trim() : "", timeLines: tops.size, timeText: time.textContent.trim(),
    timeTitle: titled ? titled.title : "", argsText: args.textContent,
    argsRight: args.getBoundingClientRect().right, argsWidth: args.getBoundingClientRect().width,
    argsClips: args.scrollWidth > args.clientWidth + 1, rowRight: tr.getBoundingClientRect().right,
    rowDisplay: getComputedStyle(tr).display};
})`

// TestBrowserAuditReadable: the audit log reads at 390 and 1280 px. Each
// time takes one line, compact, its full value in a tooltip; the
// arguments are there whole (long ones fold open), wrapping in their
// cell, which stays on screen; at 390 px (below 960) each record is a
// card.
func TestBrowserAuditReadable(t *testing.T) {
	dir := browsertest.Artifacts(t)
	f := newFixture(t, &fixtureOptions{identity: &page.Identity{Principal: "alice", Name: "Alice", Admin: true}, opts: page.Options{Refresh: -1}})
	seedAudit(f)
	seedLayout(t, f)
	ctx, problems := browsertest.Tab(t)
	link, err := f.login.NewLink(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "sign in", chromedp.Navigate(link), chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("pending")))
	for _, w := range widths {
		viewport(t, ctx, w)
		browsertest.Do(t, ctx, "audit log", chromedp.Navigate(f.srv.URL+"/audit?limit=20"), chromedp.WaitVisible(chromedp.ID("records")))
		checkFits(t, ctx, "audit", w)
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]auditRow](auditRowsJS))
		if err != nil || len(rows) != 20 {
			t.Fatalf("rows: %d, %v", len(rows), err)
		}
		for i, r := range rows {
			if r.TimeLines != 1 || len(r.TimeText) > 16 {
				t.Errorf("at %d px row %d: the time %q takes %d lines", w, i, r.TimeText, r.TimeLines)
			}
			if len(r.TimeTitle) < 23 || !strings.HasSuffix(r.TimeTitle, " UTC") || !strings.Contains(r.TimeTitle, r.TimeText[len(r.TimeText)-8:]) {
				t.Errorf("at %d px row %d: the time %q has the tooltip %q, want its full value", w, i, r.TimeText, r.TimeTitle)
			}
			if r.ArgsClips || r.ArgsRight > float64(w) || r.RowRight > float64(w) {
				t.Errorf("at %d px row %d (%s): the arguments cell ends at %.0f px, its row at %.0f px, clipping %v",
					w, i, r.Tool, r.ArgsRight, r.RowRight, r.ArgsClips)
			}
			if w >= 1280 && r.ArgsWidth < 300 {
				t.Errorf("at %d px row %d: the arguments cell is %.0f px wide", w, i, r.ArgsWidth)
			}
			if card := r.RowDisplay != "table-row"; card != (w <= 960) {
				t.Errorf("at %d px row %d is shown as %s", w, i, r.RowDisplay)
			}
		}
		// The long arguments are there whole, folded open on demand.
		long := rows[1]
		if long.Tool != "manage_files" || !strings.Contains(long.ArgsText, longURL) || !strings.Contains(long.ArgsText, longPath) {
			t.Fatalf("at %d px the arguments of %s are not whole: %q", w, long.Tool, long.ArgsText)
		}
		sel := "#records tbody tr:nth-child(2) td.args details"
		browsertest.Do(t, ctx, "unfold the arguments", chromedp.Click(chromedp.CSS(sel+" summary")), chromedp.WaitVisible(chromedp.CSS(sel+" pre")))
		if all := browsertest.Text(t, ctx, sel+" pre"); !strings.Contains(all, longURL) || !strings.HasSuffix(all, "}") {
			t.Errorf("at %d px the unfolded arguments read %q", w, all)
		}
		checkFits(t, ctx, "audit, arguments unfolded", w)
		browsertest.Screenshot(t, ctx, dir, fmt.Sprintf("audit-%d", w))
	}
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}

// TestBrowserToolsCompact: 40 tools (the GitHub server's) list one line
// each at 1280 px, their effect and hints as badges, in a page that fits
// the screen; a tool's details (every value, where it came from) open with
// a click or the keyboard. At 390 px a tool takes at most three short
// lines.
func TestBrowserToolsCompact(t *testing.T) {
	dir := browsertest.Artifacts(t)
	f := newFixture(t, &fixtureOptions{safety: github40, opts: page.Options{Refresh: -1}})
	ctx, problems := browsertest.Tab(t)
	link, err := f.login.NewLink(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, ctx, "sign in", chromedp.Navigate(link), chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("pending")))
	// maxHeight bounds the page's height for the 40 tools (it was about
	// 4,450 px at 1280 px, on a page 1,360 px wide); maxRow a tool's row.
	for _, tc := range []struct {
		w                 int64
		maxHeight, maxRow int
	}{{1280, 2000, 40}, {390, 4000, 96}} {
		viewport(t, ctx, tc.w)
		browsertest.Do(t, ctx, "tools", chromedp.Navigate(f.srv.URL+"/tools"), chromedp.WaitVisible(chromedp.CSS("table.tools")))
		l := checkFits(t, ctx, "tools", tc.w)
		t.Logf("40 tools at %d px: the page is %d px tall", tc.w, l.ScrollHeight)
		if l.ScrollHeight > tc.maxHeight {
			t.Errorf("40 tools at %d px: the page is %d px tall, want at most %d", tc.w, l.ScrollHeight, tc.maxHeight)
		}
		heights, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll("table.tools > tbody > tr")).map(tr => Math.round(tr.getBoundingClientRect().height))`))
		if err != nil || len(heights) != 40 {
			t.Fatalf("rows %v, %v; want 40", heights, err)
		}
		for i, h := range heights {
			if h > tc.maxRow {
				t.Errorf("at %d px tool %d takes %d px, want at most %d", tc.w, i, h, tc.maxRow)
			}
		}
		browsertest.Screenshot(t, ctx, dir, fmt.Sprintf("tools-%d", tc.w))
	}
	// create_branch: a destructive write that asks first, as badges.
	row := `table.tools > tbody > tr:nth-child(5)`
	if b := browsertest.Text(t, ctx, row+" td.hints"); !strings.Contains(b, "destructive") || !strings.Contains(b, "write") || !strings.Contains(b, "asks first") {
		t.Errorf("create_branch's badges: %q", b)
	}
	browsertest.Do(t, ctx, "open a tool with a click", chromedp.Click(chromedp.CSS(row+" summary")), chromedp.WaitVisible(chromedp.CSS(row+" table.values")))
	if d := browsertest.Text(t, ctx, row+" table.values"); !strings.Contains(d, "result sensitivity") || !strings.Contains(d, "confirmation") || !strings.Contains(d, "required") {
		t.Errorf("create_branch's details: %q", d)
	}
	checkFits(t, ctx, "tools, a tool open", 390)
	row = `table.tools > tbody > tr:nth-child(12)`
	browsertest.Do(t, ctx, "open a tool with the keyboard", chromedp.Focus(chromedp.CSS(row+" summary")), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(row+" table.values")))
	browsertest.Screenshot(t, ctx, dir, "tools-390-open")
	for _, p := range problems() {
		t.Errorf("browser reported: %s", p)
	}
}
