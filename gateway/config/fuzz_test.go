package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// FuzzParse feeds Parse arbitrary files, as YAML, as JSON and as VS
// Code's file: it never panics, its errors are bounded and printable, and
// what it accepts Marshal writes back to a file that the schema accepts and
// Parse reads to the same config.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 5m ./gateway/config/
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"examples", "clients", "bad"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) < 64<<10 {
				f.Add(uint8(0), data)
				f.Add(uint8(1), data)
			}
		}
	}
	f.Add(uint8(2), []byte(`{"servers": {"s": {"type": "stdio", "command": "${input:x}"}}, "inputs": [{"id": "x", "default": "d"}]}`))
	f.Add(uint8(0), []byte("servers: {s: {command: x, env: {'<<': v, '${X}': '$${Y}', 'a: b': \"\\u2028\"}}}"))
	_, rs := loadSchema(f)
	names := []string{"/fuzz/gateway.yaml", "/fuzz/mcp.json", "/fuzz/.vscode/mcp.json"}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := names[int(which)%len(names)]
		c, err := Parse(name, data, testEnv)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 || len(errs) > maxErrors+1 {
				t.Fatalf("error of type %T with %d problems: %v", err, len(errs), err)
			}
			for _, e := range errs {
				msg := e.Error()
				if len(msg) > 1024 || strings.ContainsFunc(msg, unicode.IsControl) {
					t.Fatalf("problem of %d bytes or with control characters: %q", len(msg), msg)
				}
			}
			return
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(name, out, testEnv)
		if err != nil {
			t.Fatalf("Marshal wrote what Parse refuses: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("read back differs:\n%s", out)
		}
		if err := rs.Validate(readAny(t, "out.yaml", out)); err != nil {
			t.Fatalf("the schema refuses Marshal's output: %v\n%s", err, out)
		}
	})
}

// FuzzEnvFile feeds the env file reader arbitrary files.
//
//	go test -run '^$' -fuzz FuzzEnvFile -fuzztime 1m ./gateway/config/
func FuzzEnvFile(f *testing.F) {
	f.Add([]byte("export A=1\nB='x'\nC=\"y\\n\" # c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals, err := parseEnvFile(data)
		if err != nil {
			return
		}
		for k, v := range vals {
			if !validEnvName(k) || strings.ContainsRune(v, 0) {
				t.Fatalf("%q=%q", k, v)
			}
		}
	})
}
