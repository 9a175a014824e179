package config

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDeployDocExamples parses the config of docs/deploy.md's examples:
// the blocks fenced ```yaml config (a config or a part of one, given a
// server when it names none) and the config key of those fenced ```yaml
// values (the Helm chart's values).
func TestDeployDocExamples(t *testing.T) {
	t.Parallel()
	blocks := deployDocExamples(t)
	if len(blocks) < 6 {
		t.Fatalf("%d config examples in docs/deploy.md, want at least 6", len(blocks))
	}
	for i, b := range blocks {
		name := "docs/deploy.md example " + strconv.Itoa(i+1) + ".yaml"
		if _, err := Parse("/abs/"+name, b, testEnv); err != nil {
			t.Errorf("%s: Parse refuses it: %v\n%s", name, err, b)
		}
	}
}

var startsServers = regexp.MustCompile(`(?m)^servers:`)

// deployDocExamples returns the configs of docs/deploy.md's examples.
func deployDocExamples(t *testing.T) [][]byte {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var kind, indent string // of the block being read; kind "" outside one
	var cur []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case kind == "" && (trimmed == "```yaml config" || trimmed == "```yaml values"):
			kind, indent, cur = strings.TrimPrefix(trimmed, "```yaml "), line[:len(line)-len(trimmed)], nil
		case kind != "" && trimmed == "```":
			cfg := cur
			if kind == "values" {
				cfg = valuesConfig(cur)
			}
			if cfg != nil {
				b := []byte(strings.Join(cfg, "\n") + "\n")
				if !startsServers.Match(b) {
					b = append([]byte("servers:\n  docs:\n    command: docs-server\n"), b...)
				}
				out = append(out, b)
			}
			kind = ""
		case kind != "":
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return out
}

// valuesConfig returns the lines of the config key of Helm values, out
// of their indentation; nil when there is none.
func valuesConfig(lines []string) []string {
	var out []string
	in := false
	for _, l := range lines {
		switch {
		case l == "config:":
			in = true
		case in && (l == "" || strings.HasPrefix(l, "  ")):
			out = append(out, strings.TrimPrefix(l, "  "))
		default:
			in = false
		}
	}
	return out
}
