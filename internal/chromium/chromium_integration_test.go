//go:build integration

package chromium_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/chromium"
)

// TestDOM runs the real browser: the page's script sees the fragment and
// its change to the DOM is what DOM returns.
func TestDOM(t *testing.T) {
	file := filepath.Join(t.TempDir(), "page with space.html")
	page := `<!doctype html><html><body><p id="out">script did not run</p>
<script>document.getElementById("out").textContent = "fragment=" + location.hash.slice(1);</script></body></html>`
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium.DOM(t, file, "risk=destructive&q=a")
	if !strings.Contains(dom, `<p id="out">fragment=risk=destructive&amp;q=a</p>`) {
		t.Errorf("DOM after the script:\n%s", dom)
	}
}
