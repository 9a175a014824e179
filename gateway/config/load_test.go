package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFile writes a file of a test's temporary directory.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLoad reads a file from disk: relative paths against its directory,
// env files read and merged under env.
func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "project", ".env"), "# secrets\nexport TOKEN=from-file\nSHARED=file\n\nQUOTED=\"a b\\n\"\n")
	writeFile(t, filepath.Join(dir, "project", "gateway.yaml"), `
servers:
  tools:
    command: ./run.sh
    cwd: tools
    envFile: .env
    env:
      SHARED: config
`)
	c, err := Load(filepath.Join(dir, "project", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Servers["tools"]
	if s.Cwd != filepath.Join(dir, "project", "tools") || s.EnvFile != filepath.Join(dir, "project", ".env") {
		t.Errorf("cwd %q envFile %q: want them relative to the file's directory", s.Cwd, s.EnvFile)
	}
	if want := map[string]string{"TOKEN": "from-file", "SHARED": "config", "QUOTED": "a b\n"}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("env = %q, want %q", s.Env, want)
	}
	if s.Command != "./run.sh" {
		t.Errorf("command %q: commands are left as written", s.Command)
	}

	// Parse does no I/O: the env file is recorded, not read.
	data, _ := os.ReadFile(filepath.Join(dir, "project", "gateway.yaml"))
	c, err = Parse(filepath.Join(dir, "project", "gateway.yaml"), data, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if env := c.Servers["tools"].Env; len(env) != 1 {
		t.Errorf("Parse read the env file: %q", env)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), "servers:\n  s:\n    command: x\n    envFile: nope.env\n")
	_, err := Load(filepath.Join(dir, "a.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "a.yaml")+":4:14: servers.s.envFile: open "+filepath.Join(dir, "nope.env")) {
		t.Errorf("missing env file: %v", err)
	}
	writeFile(t, filepath.Join(dir, "bad.env"), "A=1\nnot a line\n")
	writeFile(t, filepath.Join(dir, "b.yaml"), "servers:\n  s:\n    command: x\n    envFile: bad.env\n")
	_, err = Load(filepath.Join(dir, "b.yaml"))
	if want := filepath.Join(dir, "b.yaml") + ":4:14: servers.s.envFile: " + filepath.Join(dir, "bad.env") + ":2: expected NAME=value, with a name of letters, digits and _"; err == nil || err.Error() != want {
		t.Errorf("bad env file: %v\nwant %s", err, want)
	}
}

func TestParseEnvFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{"A=1\r\nB = two words \n#c\n  # d\nexport C=3", map[string]string{"A": "1", "B": "two words", "C": "3"}, ""},
		{"A='x # y \\n'\nB=\"q\\\"t\\\\\\t\"\nC=v # comment\nD=\nE=a=b", map[string]string{"A": "x # y \\n", "B": "q\"t\\\t", "C": "v", "D": "", "E": "a=b"}, ""},
		{"\uFEFFA=1", map[string]string{"A": "1"}, ""},
		{"A", nil, "1: expected NAME=value"},
		{"1A=x", nil, "1: expected NAME=value"},
		{"\nA='x", nil, "2: A: unterminated '"},
		{"A=\"x\\\"", nil, "1: A: unterminated \""},
		{"A=\"\x00\"", nil, "1: A: the value contains a NUL character"},
	} {
		got, err := parseEnvFile([]byte(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("%q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
