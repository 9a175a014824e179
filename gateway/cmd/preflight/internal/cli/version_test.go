package cli

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestVersion: preflight version, -version and --version print one line
// with the module version and the Go version; -json the same as data.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, errOut := runMain(t, "version")
	if code != exitOK || errOut != "" || !regexp.MustCompile(`^preflight \S+ \((commit [0-9a-f]+(\+dirty)?, )?(\d{4}-\d\d-\d\d, )?`+regexp.QuoteMeta(runtime.Version())+`\)\n$`).MatchString(out) {
		t.Fatalf("version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, flag := range []string{"-version", "--version"} {
		if code, got, _ := runMain(t, flag); code != exitOK || got != out {
			t.Errorf("%s: exit %d, %q; want %q", flag, code, got, out)
		}
	}
	code, js, _ := runMain(t, "version", "-json")
	var v buildVersion
	decodeJSON(t, js, &v)
	if code != exitOK || v.Go != runtime.Version() || v.Version == "" || v.String()+"\n" != out {
		t.Errorf("version -json: exit %d, %+v", code, v)
	}
	if code, _, errOut := runMain(t, "version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, %s", code, errOut)
	}
}

// TestVersionOf reads what the go command records: a release, a work
// tree with changes, the module as a dependency, and a release build's
// stamped version, which wins over the module's.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"},
		{Key: "vcs.time", Value: "2026-11-20T09:30:00Z"}, {Key: "vcs.modified", Value: "false"}}
	dirty := append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, tc := range []struct {
		bi      debug.BuildInfo
		release string
		want    string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: modulePath, Version: "v0.3.0"}, Settings: vcs},
			"", "preflight v0.3.0 (commit 1a2b3c4d5e6f, 2026-11-20, go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: dirty},
			"", "preflight (devel) (commit 1a2b3c4d5e6f+dirty, 2026-11-20, go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "example.com/tool"}, Deps: []*debug.Module{{Path: modulePath, Version: "v0.4.1"}}},
			"", "preflight v0.4.1 (go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0"}, "", "preflight (devel) (go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261120093000-1a2b3c4d5e6f"}, Settings: vcs},
			"v0.5.0", "preflight v0.5.0 (commit 1a2b3c4d5e6f, 2026-11-20, go1.26.0)"},
	} {
		if got := versionOf(&tc.bi, tc.release).String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
