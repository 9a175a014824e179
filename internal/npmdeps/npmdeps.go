// Package npmdeps installs the pinned npm packages that tests run. Given a
// directory holding package.json and package-lock.json, [Ensure] runs
// `npm ci` there unless node_modules already holds exactly the pinned
// versions; [EnsureT] does so once per directory per test binary and fails
// the test on error.
//
// Several test binaries may get to the same directory at once (go test
// ./...), and npm ci removes node_modules first, so the install is
// serialized across processes with an advisory lock on the directory
// (flock; no lock where flock is unavailable).
//
// The package is meant for tests only; it imports package testing.
package npmdeps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// npmTimeout stops a hung npm ci.
	npmTimeout = 5 * time.Minute
	// maxProblems caps the mismatches a reason lists.
	maxProblems = 10
)

// Ensure makes dir/node_modules hold the versions pinned in dir, running
// `npm ci --no-audit --no-fund` in dir when it does not: when a dependency
// of package.json (an optional one only if its platform is this one) is
// missing or at another version than package.json pins, or a package of
// package-lock.json is installed at another version than the lock file's
// (or is missing and not optional). The error includes npm's output.
func Ensure(dir string) error {
	_, err := ensure(dir)
	return err
}

// ensure is [Ensure], also returning why it ran npm ci ("" if it did not).
func ensure(dir string) (why string, err error) {
	if why, err = mismatch(dir); err != nil || why == "" {
		return "", err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return why, err
	}
	defer unlock()
	// Another process may have installed while this one waited.
	if why, err = mismatch(dir); err != nil || why == "" {
		return "", err
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return why, fmt.Errorf("npm not found, needed in %s (%s): %v", dir, why, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%v (timed out after %v)", err, npmTimeout)
	}
	if err != nil {
		return why, fmt.Errorf("npm ci in %s (%s): %v\n%s", dir, why, err, out)
	}
	after, err := mismatch(dir)
	if err == nil && after != "" {
		err = errors.New(after)
	}
	if err != nil {
		return why, fmt.Errorf("after npm ci in %s: %v\n%s", dir, err, out)
	}
	return why, nil
}

// memo holds EnsureT's outcome per absolute directory.
var memo struct {
	sync.Mutex
	dirs map[string]*outcome
}

type outcome struct {
	once sync.Once
	why  string
	err  error
}

// EnsureT calls [Ensure] for dir once per test binary and fails the test
// (never skips it) if that failed; later calls for the same directory
// repeat the first outcome. It logs why when it ran npm ci.
func EnsureT(t testing.TB, dir string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("npmdeps: %v", err)
	}
	memo.Lock()
	o := memo.dirs[abs]
	if o == nil {
		o = new(outcome)
		if memo.dirs == nil {
			memo.dirs = make(map[string]*outcome)
		}
		memo.dirs[abs] = o
	}
	memo.Unlock()
	ran := false
	o.once.Do(func() {
		ran = true
		o.why, o.err = ensure(abs)
	})
	if o.err != nil {
		t.Fatalf("npmdeps: %v", o.err)
	}
	if ran && o.why != "" {
		t.Logf("npmdeps: ran npm ci in %s: %s", abs, o.why)
	}
}

// manifest is the part of package.json that pins versions.
type manifest struct {
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

// lockfile is the part of package-lock.json (lockfileVersion 2 or 3) that
// lists the installed tree, keyed by path ("node_modules/a/node_modules/b").
type lockfile struct {
	Packages map[string]lockEntry `json:"packages"`
}

type lockEntry struct {
	Version     string    `json:"version"`
	Link        bool      `json:"link"`
	Optional    bool      `json:"optional"`
	DevOptional bool      `json:"devOptional"`
	OS          platforms `json:"os"`
	CPU         platforms `json:"cpu"`
}

// fits reports whether npm installs e on this platform, going by its os
// and cpu fields.
func (e lockEntry) fits() bool {
	return admits(e.OS, npmOS()) && admits(e.CPU, npmCPU())
}

// platforms is an os or cpu field: a string or a list of strings.
type platforms []string

func (p *platforms) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*p = platforms{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(p))
}

// admits reports whether an os or cpu list admits value, as npm decides:
// "!x" excludes x; otherwise value must be listed, unless the list holds
// only exclusions, is empty, or is "any".
func admits(list platforms, value string) bool {
	if len(list) == 0 || len(list) == 1 && list[0] == "any" {
		return true
	}
	negated, match := 0, false
	for _, entry := range list {
		if name, ok := strings.CutPrefix(entry, "!"); ok {
			negated++
			if name == value {
				return false
			}
		} else if entry == value {
			match = true
		}
	}
	return match || negated == len(list)
}

// npmOS is Node.js's process.platform for this GOOS.
func npmOS() string {
	switch runtime.GOOS {
	case "windows":
		return "win32"
	case "solaris", "illumos":
		return "sunos"
	}
	return runtime.GOOS
}

// npmCPU is Node.js's process.arch for this GOARCH.
func npmCPU() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	case "ppc64le":
		return "ppc64"
	}
	return runtime.GOARCH
}

// mismatch says why dir/node_modules does not hold the versions pinned in
// dir, or "" if it does. The error is for a package.json or
// package-lock.json that cannot be read.
func mismatch(dir string) (string, error) {
	var pkg manifest
	if err := readJSON(filepath.Join(dir, "package.json"), &pkg); err != nil {
		return "", err
	}
	var lock lockfile
	if err := readJSON(filepath.Join(dir, "package-lock.json"), &lock); err != nil {
		return "", err
	}
	want := maps.Clone(pkg.Dependencies)
	if want == nil {
		want = make(map[string]string)
	}
	for name, version := range pkg.OptionalDependencies {
		if e, ok := lock.Packages["node_modules/"+name]; !ok || e.fits() {
			want[name] = version
		}
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if p := check(dir, "node_modules/"+name, want[name], false); p != "" {
			problems = append(problems, p)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(lock.Packages)) {
		e := lock.Packages[path]
		name, ok := strings.CutPrefix(path, "node_modules/")
		if !ok || e.Link || e.Version == "" {
			continue // the root, a workspace, or a link
		}
		if _, direct := want[name]; direct {
			continue // checked above against package.json
		}
		if p := check(dir, path, e.Version, e.Optional || e.DevOptional); p != "" {
			problems = append(problems, p+" (package-lock.json)")
		}
	}
	if n := len(problems); n > maxProblems {
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", n-maxProblems))
	}
	return strings.Join(problems, "; "), nil
}

// check says how the package installed at dir/path (slash-separated,
// "node_modules/...") differs from version, or "" if it does not. A missing
// optional package is no difference.
func check(dir, path, version string, optional bool) string {
	name := strings.TrimPrefix(path, "node_modules/")
	var installed struct {
		Version string `json:"version"`
	}
	err := readJSON(filepath.Join(dir, filepath.FromSlash(path), "package.json"), &installed)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if optional {
			return ""
		}
		return name + " is not installed"
	case err != nil:
		return fmt.Sprintf("%s: %v", name, err)
	case installed.Version != version:
		return fmt.Sprintf("%s is %s, want %s", name, installed.Version, version)
	}
	return ""
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// Bin returns the path of the bin entry (the first, by name, when there
// are several) of the installed package @modelcontextprotocol/pkg under
// dir/node_modules. It fails t when the package or its entry is missing.
func Bin(t testing.TB, dir, pkg string) string {
	t.Helper()
	pdir := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg)
	b, err := os.ReadFile(filepath.Join(pdir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	var one string
	if json.Unmarshal(p.Bin, &one) == nil {
		return filepath.Join(pdir, one)
	}
	var many map[string]string
	if err := json.Unmarshal(p.Bin, &many); err != nil || len(many) == 0 {
		t.Fatalf("%s: no bin entry in package.json", pkg)
	}
	return filepath.Join(pdir, many[slices.Sorted(maps.Keys(many))[0]])
}
