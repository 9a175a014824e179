//go:build integration

package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// TestCrossCheck counts every string the command counts on the shared
// catalogs (each tool's listing today, its minimal listing at every
// schema level, its fetched description), each whole catalog file, and
// the vectors of [TestO200kVectors], with two other implementations of
// o200k_base run by Node.js: OpenAI's tiktoken core built to WebAssembly
// (npm tiktoken), the reference, and gpt-tokenizer, an independent
// implementation in JavaScript. Every count must equal the reference's;
// gpt-tokenizer must agree too, except on text with U+0085, which
// JavaScript's \s does not treat as white space.
//
// The npm packages are pinned in testdata/xcheck (package.json and
// package-lock.json) and installed with `npm ci` on first use, so the
// test needs Node.js and, the first time, the npm registry.
func TestCrossCheck(t *testing.T) {
	t.Parallel()
	dir := xcheckDeps(t)
	c := counter(t)

	var texts []string
	add := func(b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	for _, cat := range catalogs {
		raw, err := os.ReadFile(filepath.Join(sharedCatalogs(t), cat.file))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(raw))
		for _, level := range []disclose.SchemaLevel{disclose.SchemaOpen, disclose.SchemaTopLevel, disclose.SchemaFull} {
			for _, tool := range derived(readShared(t, cat.file), level) {
				if level == disclose.SchemaOpen {
					add(Visible(tool.Listed))
					add(marshal(map[string]any{tool.Listed.Name: tool.Fetched}))
				}
				add(Visible(tool.Minimal))
			}
		}
	}
	for _, v := range o200kVectors {
		texts = append(texts, v.text)
	}

	input, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodePath(t), "count.cjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node count.cjs: %v\n%s", err, stderr.String())
	}
	var counts struct {
		Tiktoken     []int `json:"tiktoken"`
		GPTTokenizer []int `json:"gptTokenizer"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &counts); err != nil {
		t.Fatalf("node count.cjs: %v\n%.500s", err, stdout.String())
	}
	if len(counts.Tiktoken) != len(texts) || len(counts.GPTTokenizer) != len(texts) {
		t.Fatalf("node counted %d and %d strings, sent %d", len(counts.Tiktoken), len(counts.GPTTokenizer), len(texts))
	}
	total, bad := 0, 0
	for i, text := range texts {
		got := c.Count(text)
		total += got
		if got != counts.Tiktoken[i] {
			bad++
			t.Errorf("%d tokens, OpenAI's tiktoken counts %d: %.200q", got, counts.Tiktoken[i], text)
		}
		if counts.GPTTokenizer[i] != counts.Tiktoken[i] && !strings.ContainsRune(text, '\u0085') {
			t.Errorf("gpt-tokenizer counts %d, OpenAI's tiktoken %d: %.200q", counts.GPTTokenizer[i], counts.Tiktoken[i], text)
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("%d strings, %d tokens: the same counts as OpenAI's tiktoken", len(texts), total)
}

func nodePath(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (Node.js 20 or newer runs the cross-check): %v", err)
	}
	return node
}

// xcheckDeps returns testdata/xcheck with its pinned npm packages
// installed, running `npm ci` when node_modules does not hold them.
func xcheckDeps(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "xcheck"))
	if err != nil {
		t.Fatal(err)
	}
	npmdeps.EnsureT(t, dir)
	return dir
}
