//go:build integration

package safety

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/chromium"
)

// TestHTMLInChromium opens the page in a real headless Chromium and checks
// that the script ran, built the effect filter, and applied the filters
// given in the URL fragment. A missing Chromium fails the test.
func TestHTMLInChromium(t *testing.T) {
	var b bytes.Buffer
	if err := FromTarget(target(t)).HTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, banned := range []string{"<link", "src=\"http", "href=\"http", "@import", "url("} {
		if strings.Contains(page, banned) {
			t.Errorf("the page is not self-contained: it has %q", banned)
		}
	}
	if strings.Contains(page, "<b>safely</b>") {
		t.Error("a description's markup was not escaped")
	}
	file := filepath.Join(t.TempDir(), "safety.html")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fragment string
		shown    string
		visible  []string
		hidden   []string
	}{
		{"", "Showing 3 of 3 tools (6 rows)", []string{"read_note", "append_note", "manage_notes"}, nil},
		{"risk=destructive", "Showing 1 of 3 tools (3 rows)", []string{"manage_notes"}, []string{"read_note", "append_note"}},
		{"risk=read-only", "Showing 2 of 3 tools (2 rows)", []string{"read_note", "manage_notes"}, []string{"append_note"}},
		{"confirm=1&variants=0", "Showing 1 of 3 tools (1 rows)", []string{"manage_notes"}, []string{"read_note", "append_note"}},
		{"q=append", "Showing 1 of 3 tools (1 rows)", []string{"append_note"}, []string{"read_note", "manage_notes"}},
		{"effect=delete", "Showing 1 of 3 tools (2 rows)", []string{"manage_notes"}, []string{"read_note"}}, // the static row and the failed variant
		{"q=nothing-matches", "Showing 0 of 3 tools (0 rows)", nil, []string{"read_note", "append_note", "manage_notes"}},
	} {
		dom := chromium.DOM(t, file, tc.fragment)
		if !strings.Contains(dom, `data-ready="1"`) {
			t.Fatalf("#%s: the page's script did not run:\n%s", tc.fragment, dom)
		}
		if !strings.Contains(dom, tc.shown) {
			t.Errorf("#%s: %q not shown; counter: %s", tc.fragment, tc.shown, regexp.MustCompile(`<output[^>]*>[^<]*`).FindString(dom))
		}
		for _, opt := range []string{`<option value="read">read</option>`, `<option value="delete">delete</option>`, `<option value="write">write</option>`} {
			if !strings.Contains(dom, opt) {
				t.Errorf("#%s: the effect filter lacks %s", tc.fragment, opt)
			}
		}
		for _, name := range tc.visible {
			if toolHidden(t, dom, name) {
				t.Errorf("#%s: %s hidden, want shown", tc.fragment, name)
			}
		}
		for _, name := range tc.hidden {
			if !toolHidden(t, dom, name) {
				t.Errorf("#%s: %s shown, want hidden", tc.fragment, name)
			}
		}
	}
}

// toolHidden reports whether the tool's tbody is hidden in dom.
func toolHidden(t *testing.T, dom, name string) bool {
	t.Helper()
	tag := regexp.MustCompile(`<tbody class="tool" data-name="` + regexp.QuoteMeta(name) + `"[^>]*>`).FindString(dom)
	if tag == "" {
		t.Fatalf("no tbody for %s", name)
	}
	return strings.Contains(tag, "hidden")
}
