package npmdeps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeJSON writes v as JSON to dir/rel, creating directories.
func writeJSON(t *testing.T, dir, rel string, v any) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// install writes node_modules/<path>/package.json at version.
func install(t *testing.T, dir, path, version string) {
	t.Helper()
	writeJSON(t, dir, path+"/package.json", map[string]string{"version": version})
}

// fakeProject writes a package.json and package-lock.json pinning a, @s/b,
// a's nested c, the optional here (for this platform) and elsewhere (for
// no platform), and the optional transitive opt, and installs all that
// belongs on this platform.
func fakeProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeJSON(t, dir, "package.json", map[string]any{
		"name":                 "fake",
		"dependencies":         map[string]string{"a": "1.0.0", "@s/b": "2.0.0"},
		"optionalDependencies": map[string]string{"here": "3.0.0", "elsewhere": "4.0.0"},
	})
	writeJSON(t, dir, "package-lock.json", map[string]any{
		"lockfileVersion": 3,
		"packages": map[string]any{
			"":                              map[string]any{"name": "fake"},
			"node_modules/a":                map[string]any{"version": "1.0.0"},
			"node_modules/@s/b":             map[string]any{"version": "2.0.0"},
			"node_modules/a/node_modules/c": map[string]any{"version": "5.0.0"},
			"node_modules/here":             map[string]any{"version": "3.0.0", "optional": true, "os": npmOS(), "cpu": []string{npmCPU()}},
			"node_modules/elsewhere":        map[string]any{"version": "4.0.0", "optional": true, "os": []string{"!" + npmOS()}},
			"node_modules/opt":              map[string]any{"version": "6.0.0", "optional": true},
			"node_modules/linked":           map[string]any{"resolved": "../linked", "link": true},
		},
	})
	install(t, dir, "node_modules/a", "1.0.0")
	install(t, dir, "node_modules/@s/b", "2.0.0")
	install(t, dir, "node_modules/a/node_modules/c", "5.0.0")
	install(t, dir, "node_modules/here", "3.0.0")
	return dir
}

func TestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"match", func(*testing.T, string) {}, ""},
		{"direct version", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/a", "0.9.0")
		}, "a is 0.9.0, want 1.0.0"},
		{"direct missing", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "node_modules", "@s"))
		}, "@s/b is not installed"},
		{"nested version", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/a/node_modules/c", "5.0.1")
		}, "a/node_modules/c is 5.0.1, want 5.0.0 (package-lock.json)"},
		{"nested missing", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "node_modules", "a", "node_modules"))
		}, "a/node_modules/c is not installed (package-lock.json)"},
		{"optional for this platform missing", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "node_modules", "here"))
		}, "here is not installed"},
		{"optional for this platform at another version", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/here", "3.0.1")
		}, "here is 3.0.1, want 3.0.0"},
		{"optional for another platform at another version", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/elsewhere", "4.0.1")
		}, "elsewhere is 4.0.1, want 4.0.0 (package-lock.json)"},
		{"optional transitive at another version", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/opt", "6.0.1")
		}, "opt is 6.0.1, want 6.0.0 (package-lock.json)"},
		{"optional transitive present", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/opt", "6.0.0")
		}, ""},
		{"unreadable installed package.json", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "node_modules", "a", "package.json"), []byte("{"), 0o644)
		}, "a: "},
		{"two problems", func(t *testing.T, dir string) {
			install(t, dir, "node_modules/a", "0.9.0")
			os.RemoveAll(filepath.Join(dir, "node_modules", "@s"))
		}, "@s/b is not installed; a is 0.9.0, want 1.0.0"},
		{"no node_modules", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "node_modules"))
		}, "@s/b is not installed; a is not installed; here is not installed; a/node_modules/c is not installed (package-lock.json)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeProject(t)
			tc.setup(t, dir)
			got, err := mismatch(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("mismatch = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMismatchManyProblems(t *testing.T) {
	dir := t.TempDir()
	deps := map[string]string{}
	for i := range maxProblems + 3 {
		deps[string(rune('a'+i))] = "1.0.0"
	}
	writeJSON(t, dir, "package.json", map[string]any{"dependencies": deps})
	writeJSON(t, dir, "package-lock.json", map[string]any{"lockfileVersion": 3})
	got, err := mismatch(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "is not installed"); n != maxProblems {
		t.Errorf("%d problems listed, want %d: %s", n, maxProblems, got)
	}
	if !strings.HasSuffix(got, "; and 3 more") {
		t.Errorf("mismatch = %q, want it to end in %q", got, "; and 3 more")
	}
}

func TestMismatchBadManifest(t *testing.T) {
	dir := fakeProject(t)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte("{"), 0o644)
	if _, err := mismatch(dir); err == nil || !strings.Contains(err.Error(), "package.json") {
		t.Errorf("bad package.json: err = %v", err)
	}
	os.Remove(filepath.Join(dir, "package.json"))
	if _, err := mismatch(dir); err == nil {
		t.Error("no package.json: no error")
	}
	dir = fakeProject(t)
	os.Remove(filepath.Join(dir, "package-lock.json"))
	if _, err := mismatch(dir); err == nil {
		t.Error("no package-lock.json: no error")
	}
}

func TestAdmits(t *testing.T) {
	for _, tc := range []struct {
		list  platforms
		value string
		want  bool
	}{
		{nil, "linux", true},
		{platforms{"any"}, "linux", true},
		{platforms{"linux"}, "linux", true},
		{platforms{"darwin", "linux"}, "linux", true},
		{platforms{"darwin"}, "linux", false},
		{platforms{"!win32"}, "linux", true},
		{platforms{"!win32"}, "win32", false},
		{platforms{"!win32", "!darwin"}, "linux", true},
		{platforms{"linux", "!darwin"}, "win32", false},
	} {
		if got := admits(tc.list, tc.value); got != tc.want {
			t.Errorf("admits(%q, %q) = %v, want %v", tc.list, tc.value, got, tc.want)
		}
	}
	var p platforms
	if err := json.Unmarshal([]byte(`"linux"`), &p); err != nil || len(p) != 1 || p[0] != "linux" {
		t.Errorf(`"linux" decodes to %q, %v`, p, err)
	}
	if err := json.Unmarshal([]byte(`["x64","arm64"]`), &p); err != nil || len(p) != 2 || p[1] != "arm64" {
		t.Errorf(`["x64","arm64"] decodes to %q, %v`, p, err)
	}
}

// TestEnsureInstalled runs no npm when node_modules matches: with no npm
// on PATH, looking for it would fail.
func TestEnsureInstalled(t *testing.T) {
	dir := fakeProject(t)
	t.Setenv("PATH", t.TempDir())
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	EnsureT(t, dir)
}

func TestEnsureNoNPM(t *testing.T) {
	dir := fakeProject(t)
	install(t, dir, "node_modules/a", "0.9.0")
	t.Setenv("PATH", t.TempDir())
	err := Ensure(dir)
	if err == nil || !strings.Contains(err.Error(), "npm not found") || !strings.Contains(err.Error(), "a is 0.9.0, want 1.0.0") {
		t.Errorf("Ensure = %v, want npm not found, with why", err)
	}
}
