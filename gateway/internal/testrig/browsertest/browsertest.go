// Package browsertest drives the system Chromium (found by
// internal/chromium) for the gateway's browser tests: one headless tab
// whose console errors, CSP violations and uncaught exceptions are
// collected, steps that fail the test, and screenshots kept as artifacts.
package browsertest

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

	"github.com/preflightmcp/preflight/internal/chromium"
)

// ArtifactsEnv names the directory where the browser tests keep their
// screenshots; unset, they go to the test's temporary directory.
const ArtifactsEnv = "PREFLIGHT_TEST_ARTIFACTS"

// Bound limits each wait of a browser test; it is a limit to fail by,
// never a synchronization.
const Bound = 60 * time.Second

// Artifacts returns the directory for this test's screenshots.
func Artifacts(t testing.TB) string {
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

// Tab starts the system Chromium and returns a tab, ended with the test,
// and problems, which returns the console errors, CSP violations and
// uncaught exceptions the tab has seen so far.
func Tab(t testing.TB) (ctx context.Context, problems func() []string) {
	t.Helper()
	bin, err := chromium.Find()
	if err != nil {
		t.Fatalf("Chromium is required to drive the page in a browser: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	tctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tctx, chromium.Timeout+Bound)
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

// Do runs the actions of one step, failing the test with the step's name.
func Do(t testing.TB, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// Text returns the trimmed text content of the element sel selects.
func Text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// Screenshot keeps a full-page screenshot as dir/name.png.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
