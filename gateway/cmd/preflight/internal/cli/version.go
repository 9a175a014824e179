package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
)

// modulePath is the module the preflight command is built from.
const modulePath = "github.com/preflightmcp/preflight/gateway"

// releaseVersion is the version a release build stamps with
// -ldflags "-X github.com/preflightmcp/preflight/gateway/cmd/preflight/internal/cli.releaseVersion=v0.3.0"
// (scripts/release); empty otherwise, and the build information says.
var releaseVersion string

type versionCmd struct {
	common
}

func (c *versionCmd) synopsis() string {
	return `usage: preflight version [-json]

Prints the version of preflight as the binary records it: the release
version (binaries of scripts/release) or else the module version (a
release for go install ...@version, a pseudo-version when built from a
work tree, or "(devel)" when built without version control
information), the commit it was built from (+dirty when the work tree
had changes) and its date, and the Go version. preflight -version does the same.

Exit status: 0 done; 2 usage error.
`
}

func (c *versionCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json") // json: {"version", "commit", "time", "modified", "go"}
	c.bindTimeout(fs)
}

func (c *versionCmd) run(_ context.Context, env *env, inv invocation) error {
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("version takes no arguments")
	}
	v := readVersion()
	if c.format == "json" {
		return writeJSON(env.stdout, v)
	}
	_, err := fmt.Fprintln(env.stdout, v)
	return err
}

// buildVersion is what the binary records of how it was built.
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readVersion reads the build information of the running binary.
func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{Version: "(unknown)", Go: "unknown"}
	}
	return versionOf(bi, releaseVersion)
}

// versionOf reads bi: the module's version (as a dependency, or as the
// main module) unless release is set, and the VCS settings the go command
// stamps.
func versionOf(bi *debug.BuildInfo, release string) buildVersion {
	v := buildVersion{Version: bi.Main.Version, Go: bi.GoVersion}
	for _, m := range bi.Deps {
		if m.Path == modulePath {
			v.Version = m.Version
		}
	}
	if release != "" {
		v.Version = release
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version on one line:
// "preflight v0.3.0 (commit 1a2b3c4d5e6f, 2026-11-20, go1.26.0)".
func (v buildVersion) String() string {
	var parts []string
	if v.Commit != "" {
		commit := "commit " + v.Commit[:min(len(v.Commit), 12)]
		if v.Modified {
			commit += "+dirty"
		}
		parts = append(parts, commit)
	}
	if date, _, _ := strings.Cut(v.Time, "T"); date != "" {
		parts = append(parts, date)
	}
	parts = append(parts, v.Go)
	return fmt.Sprintf("preflight %s (%s)", v.Version, strings.Join(parts, ", "))
}
