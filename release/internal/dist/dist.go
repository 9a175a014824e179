// Package dist builds the release binaries of the preflight command from
// a clean checkout of the repository's HEAD commit: one archive per target
// with the LICENSE and README, a CycloneDX SBOM of each binary, and
// SHA256SUMS over everything in the output directory (docs/release.md).
package dist

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// VersionVar is the variable of the command that -ldflags -X stamps with
// the release version (gateway/cmd/preflight/internal/cli/version.go).
const VersionVar = "github.com/preflightmcp/preflight/gateway/cmd/preflight/internal/cli.releaseVersion"

// Target is one platform a binary is built for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// Targets are the platforms of a release: Linux, macOS and Windows, each on
// amd64 and arm64.
func Targets() []Target {
	var ts []Target
	for _, os := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			ts = append(ts, Target{os, arch})
		}
	}
	return ts
}

// ParseTargets reads a comma-separated list of OS/ARCH pairs, each one of
// Targets.
func ParseTargets(list string) ([]Target, error) {
	var ts []Target
	for item := range strings.SplitSeq(list, ",") {
		os, arch, _ := strings.Cut(strings.TrimSpace(item), "/")
		t := Target{os, arch}
		known := false
		for _, k := range Targets() {
			known = known || k == t
		}
		if !known {
			return nil, fmt.Errorf("unknown target %q: want one of %v", item, Targets())
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// Options say what to build. Repo, Version and Out are required.
type Options struct {
	// Repo is the repository's root directory.
	Repo string
	// Version is stamped into the binaries and names the archives.
	Version string
	// Out is the output directory; it is created when missing.
	Out string
	// Targets are the platforms to build; nil means Targets().
	Targets []Target
	// Date is the modification time of the archives' files; zero means
	// $SOURCE_DATE_EPOCH, or else the time of the HEAD commit.
	Date time.Time
}

// Built is what Build made.
type Built struct {
	// Commit is the commit the binaries were built from.
	Commit string
	// Archives are the archives' paths, in the order of the targets.
	Archives []string
}

// validVersion is what a version may be: it names files.
var validVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// Build builds, archives and describes the command of the HEAD commit of
// opts.Repo (uncommitted changes left out) for each target into opts.Out,
// then writes SHA256SUMS there.
func Build(ctx context.Context, opts Options) (*Built, error) {
	if opts.Repo == "" || opts.Out == "" {
		return nil, errors.New("dist: Repo and Out are required")
	}
	if !validVersion.MatchString(opts.Version) {
		return nil, fmt.Errorf("dist: version %q: want letters, digits and ._+- only", opts.Version)
	}
	repo, err := filepath.Abs(opts.Repo)
	if err != nil {
		return nil, err
	}
	targets := opts.Targets
	if targets == nil {
		targets = Targets()
	}
	commit, err := Git(ctx, repo, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	date := opts.Date
	if date.IsZero() {
		if date, err = SourceDate(ctx, repo, commit); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "preflight-dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	b := &Built{Commit: commit}
	src := filepath.Join(work, "src")
	if err := Checkout(ctx, repo, b.Commit, src); err != nil {
		return nil, err
	}
	for _, t := range targets {
		name := fmt.Sprintf("preflight_%s_%s_%s", opts.Version, t.OS, t.Arch)
		bin := filepath.Join(work, name, binaryName(t))
		if err := Compile(ctx, src, t.OS, t.Arch, opts.Version, bin); err != nil {
			return nil, err
		}
		if _, err := Stamped(bin, b.Commit); err != nil {
			return nil, err
		}
		files := []archiveFile{
			{name: binaryName(t), path: bin, mode: 0o755},
			{name: "LICENSE", path: filepath.Join(src, "LICENSE"), mode: 0o644},
			{name: "README.md", path: filepath.Join(src, "README.md"), mode: 0o644},
		}
		archive := filepath.Join(opts.Out, name+archiveExt(t))
		if err := writeArchive(archive, name, files, date); err != nil {
			return nil, err
		}
		if err := writeSBOM(ctx, repo, opts.Version, bin, filepath.Join(opts.Out, name+".cdx.json")); err != nil {
			return nil, err
		}
		b.Archives = append(b.Archives, archive)
	}
	return b, WriteSums(opts.Out)
}

func binaryName(t Target) string {
	if t.OS == "windows" {
		return "preflight.exe"
	}
	return "preflight"
}

func archiveExt(t Target) string {
	if t.OS == "windows" {
		return ".zip"
	}
	return ".tar.gz"
}

// SourceDate is $SOURCE_DATE_EPOCH (reproducible-builds.org) or else the
// committer time of commit in repo, in UTC, so that two builds of a
// commit are the same.
func SourceDate(ctx context.Context, repo, commit string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = Git(ctx, repo, "show", "-s", "--format=%ct", commit); err != nil {
			return time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("source date %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// Checkout puts commit of repo in dir, a clone sharing repo's objects: a
// clean tree whose .git is a directory, which the go command stamps (it
// does not recognize the .git file of a linked worktree).
func Checkout(ctx context.Context, repo, commit, dir string) error {
	top, err := Git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if _, err := Git(ctx, repo, "clone", "--quiet", "--shared", "--no-checkout", top, dir); err != nil {
		return err
	}
	_, err = Git(ctx, dir, "checkout", "--quiet", "--detach", commit)
	return err
}

// Stamped checks that the binary at bin records commit, unmodified, and
// returns the module version it records.
func Stamped(bin, commit string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", err
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["vcs.revision"] != commit || settings["vcs.modified"] != "false" {
		return "", fmt.Errorf("%s records commit %q (modified %q), not %s", bin, settings["vcs.revision"], settings["vcs.modified"], commit)
	}
	return bi.Main.Version, nil
}

// Compile builds the command in the checkout src for goos/goarch into out:
// static, without this machine's paths or a build id, at baseline CPU
// levels, with the commit the go command stamps and, when given, version
// as the release version `preflight version` prints.
func Compile(ctx context.Context, src, goos, goarch, version, out string) error {
	ldflags := "-ldflags=-s -w -buildid="
	if version != "" {
		ldflags += " -X " + VersionVar + "=" + version
	}
	// GOENV=off: the empty GOFLAGS and GOEXPERIMENT then override what
	// `go env -w` set on this machine (tags, -toolexec, an overlay, an
	// experiment), which would otherwise go into the binaries unseen.
	env := []string{"GOENV=off", "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT="}
	_, err := run(ctx, filepath.Join(src, "gateway"), env, "go", "build", "-trimpath", "-buildvcs=true", ldflags, "-o", out, "./cmd/preflight")
	return err
}

// writeSBOM writes the CycloneDX SBOM of the binary at bin: the modules
// it records, with their versions and hashes. The generator is the
// release module's pinned tool.
func writeSBOM(ctx context.Context, repo, version, bin, out string) error {
	_, err := run(ctx, filepath.Join(repo, "release"), []string{"GOWORK=off", "GOFLAGS="},
		"go", "tool", "cyclonedx-gomod", "bin", "-json", "-noserial", "-notimestamp", "-version", version, "-output", out, bin)
	return err
}

// Git runs git in dir and returns its output, trimmed.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := run(ctx, dir, nil, "git", args...)
	return strings.TrimSpace(out), err
}

// run runs a command in dir with extra environment and returns its output.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
