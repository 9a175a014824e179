package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testServerEnv, set in the environment of this test binary, makes it
// serve a test server over stdio instead of running the tests.
const testServerEnv = "PREFLIGHT_CLI_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) == "hostile" {
		os.Exit(serveHostile())
	}
	// A configuration without audit.path audits to the user's state
	// directory: the tests' is a temporary one.
	state, err := os.MkdirTemp("", "preflight-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(state) }))
}

// runMain runs the command in-process, with nothing on its standard
// input, and returns its exit status and output.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runMainInput(t, "", args...)
}

// runMainInput runs the command in-process with input on its standard
// input.
func runMainInput(t *testing.T, input string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(input), &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
