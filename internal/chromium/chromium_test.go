package chromium_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/internal/chromium"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBrowsers makes a directory holding an executable file for each
// name and returns it.
func fakeBrowsers(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindOnPath(t *testing.T) {
	for _, tc := range []struct {
		present []string
		want    string
	}{
		{[]string{"chromium"}, "chromium"},
		{[]string{"chromium-browser"}, "chromium-browser"},
		{[]string{"google-chrome"}, "google-chrome"},
		{[]string{"google-chrome-stable"}, "google-chrome-stable"},
		{[]string{"headless_shell"}, "headless_shell"},
		{[]string{"headless_shell", "google-chrome", "chromium-browser"}, "chromium-browser"},
	} {
		dir := fakeBrowsers(t, tc.present...)
		t.Setenv("PATH", dir)
		t.Setenv(chromium.EnvVar, "")
		got, err := chromium.Find()
		if err != nil || got != filepath.Join(dir, tc.want) {
			t.Errorf("with %v on PATH: Find() = %q, %v; want %s", tc.present, got, err, tc.want)
		}
	}
}

func TestFindEnv(t *testing.T) {
	dir := fakeBrowsers(t, "chromium", "my-chrome")
	t.Setenv("PATH", dir)

	t.Setenv(chromium.EnvVar, filepath.Join(dir, "my-chrome"))
	if got, err := chromium.Find(); err != nil || got != filepath.Join(dir, "my-chrome") {
		t.Errorf("path in %s: Find() = %q, %v", chromium.EnvVar, got, err)
	}
	t.Setenv(chromium.EnvVar, "my-chrome")
	if got, err := chromium.Find(); err != nil || got != filepath.Join(dir, "my-chrome") {
		t.Errorf("name in %s: Find() = %q, %v", chromium.EnvVar, got, err)
	}
	// A variable that names nothing is an error, not a silent fall back
	// to another browser.
	t.Setenv(chromium.EnvVar, filepath.Join(dir, "absent"))
	if got, err := chromium.Find(); err == nil || !strings.Contains(err.Error(), chromium.EnvVar) {
		t.Errorf("absent browser in %s: Find() = %q, %v; want an error naming the variable", chromium.EnvVar, got, err)
	}
}

func TestFindNoneSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(chromium.EnvVar, "")
	_, err := chromium.Find()
	if err == nil {
		t.Fatal("Find() found a browser on an empty PATH")
	}
	for _, want := range []string{"apt-get install -y chromium", "scripts/test", chromium.EnvVar, "chromium-browser", "headless_shell"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
