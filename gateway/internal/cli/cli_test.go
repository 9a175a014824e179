package cli

import (
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	code, out, errOut := runMain(t, "help")
	if code != exitOK || errOut != "" {
		t.Fatalf("help: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	golden(t, "usage.golden", out)

	for _, name := range []string{"demo", "inspect"} {
		code, out, _ := runMain(t, "help", name)
		if code != exitOK || !strings.Contains(out, "usage: preflight "+name) || !strings.Contains(out, "Flags:") {
			t.Errorf("help %s: exit %d, output:\n%s", name, code, out)
		}
		code, out2, _ := runMain(t, name, "-h")
		if code != exitOK || out2 != out {
			t.Errorf("%s -h: exit %d, output differs from help %s:\n%s", name, code, name, out2)
		}
	}
	golden(t, "help-inspect.golden", func() string { _, out, _ := runMain(t, "help", "inspect"); return out }())
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"demo", "-nope"}, "flag provided but not defined: -nope"},
		{[]string{"demo", "extra"}, "demo takes no arguments"},
		{[]string{"demo", "-era", "2024-11-05"}, `-era "2024-11-05": want 2026-07-28 or 2025-11-25`},
	} {
		code, out, errOut := runMain(t, tc.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, code, exitUsage)
		}
		if out != "" {
			t.Errorf("%q: stdout %q, want nothing", tc.args, out)
		}
		if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "usage") && !strings.Contains(errOut, "Usage") {
			t.Errorf("%q: stderr lacks %q and the usage:\n%s", tc.args, tc.want, errOut)
		}
	}
}
