// Package chromium runs a headless Chromium for the tests that check a
// generated HTML page in a real browser (the safety table of package
// safety and of preflight docs). It finds the browser in $PREFLIGHT_CHROMIUM
// or on PATH under its usual names.
package chromium

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EnvVar names the environment variable that, when set, says which
// browser to run: a path, or a name looked up on PATH.
const EnvVar = "PREFLIGHT_CHROMIUM"

// Timeout bounds one run of the browser.
const Timeout = 90 * time.Second

// names are the usual names of Chromium and Chrome executables, in the
// order they are tried.
func names() []string {
	return []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"}
}

// Find returns the path of the browser to run: $PREFLIGHT_CHROMIUM when it
// is set (an error if it names nothing executable), else the first of
// chromium, chromium-browser, google-chrome, google-chrome-stable and
// headless_shell found on PATH. The error says how to install one.
func Find() (string, error) {
	if v := strings.TrimSpace(os.Getenv(EnvVar)); v != "" {
		p, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvVar, v, err)
		}
		return p, nil
	}
	for _, n := range names() {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (looked for " + strings.Join(names(), ", ") + "): " +
		"install one (on Debian: apt-get install -y chromium; scripts/test does it) " +
		"or set " + EnvVar + " to the browser's path")
}

// DOM opens file in headless Chromium with the URL fragment (none when
// empty) and returns the DOM after the page's scripts ran. It fails t when
// no browser is found or the browser fails.
func DOM(t testing.TB, file, fragment string) string {
	t.Helper()
	bin, err := Find()
	if err != nil {
		t.Fatalf("Chromium is required to check the HTML page: %v", err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if fragment != "" {
		u += "#" + fragment
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", u)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	return string(out)
}
