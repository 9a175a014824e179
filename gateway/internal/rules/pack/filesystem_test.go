package pack

import (
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/hints"
)

// secretSpellings name a key or credentials file in ways the filesystem
// server resolves to the same file: a trailing separator, "." and ".."
// segments, doubled separators, backslashes, another case.
var secretSpellings = []string{
	".env", ".env/", ".env/.", "./.env", "dir/../.env", "dir//.env", "/srv/app/.env/",
	`C:\app\.\.env`, ".ENV", "/home/u/.ssh/./id_rsa", "~/.aws//credentials",
	"/home/u/.ssh/x/../id_ed25519", "certs/server.PEM/",
}

// plainSpellings name ordinary files, one of them through a secret's
// name that ".." leaves.
var plainSpellings = []string{"README.md", ".env/../README.md", ".environment/notes.txt", "docs/my.env.txt"}

// fileCalls make, for one path, a call of every filesystem tool that
// shows a file's content.
var fileCalls = map[string]func(path string) map[string]any{
	"read_text_file":      func(p string) map[string]any { return map[string]any{"path": p} },
	"read_file":           func(p string) map[string]any { return map[string]any{"path": p} },
	"read_media_file":     func(p string) map[string]any { return map[string]any{"path": p} },
	"read_multiple_files": func(p string) map[string]any { return map[string]any{"paths": []any{"a.txt", p}} },
	"edit_file dryRun":    func(p string) map[string]any { return map[string]any{"path": p, "edits": []any{}, "dryRun": true} },
	"edit_file":           func(p string) map[string]any { return map[string]any{"path": p, "edits": []any{}} },
}

// TestFilesystemSecretSpellings: every spelling of a secret's path is
// restricted for every tool that shows a file's content, a dry run of
// edit_file included; every other file is internal, never unknown, since
// its name may be a link to a key.
func TestFilesystemSecretSpellings(t *testing.T) {
	t.Parallel()
	tools := readCatalog(t, filesystem.file, "")
	r := compileFor(t, "filesystem", tools)
	for label, args := range fileCalls {
		name, _, _ := strings.Cut(label, " ")
		tool := findTool(tools, name)
		if tool == nil {
			t.Fatalf("no tool %s", name)
		}
		for want, paths := range map[hints.Sensitivity][]string{hints.SensitivityRestricted: secretSpellings, hints.SensitivityInternal: plainSpellings} {
			for _, p := range paths {
				res := resolveArgs(t, r, tool, args(p))
				if got := res.Effective.ResultSensitivity.Value; got != want || res.Problem != nil {
					t.Errorf("%s %q: sensitivity %q (rule %q, problem %v), want %s", label, p, got, res.Rule, res.Problem, want)
				}
			}
		}
	}
}
