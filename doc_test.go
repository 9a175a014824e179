package preflight_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADoc fails for any package in the module whose files
// carry no package documentation.
func TestEveryPackageHasADoc(t *testing.T) {
	documented := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		if _, seen := documented[dir]; !seen {
			documented[dir] = false
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			documented[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal("run from the module root")
	}
	for dir, ok := range documented {
		if !ok {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}

// TestReadmeSnippets fails for a Go snippet of README.md that is not the
// code of a runnable example: each snippet's lines must appear, in order,
// in one example file of the module (blank lines, comments and "..."
// aside, spacing ignored), so the README shows code that compiles and runs
// in the tests.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(string(readme), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			if l := codeLine(line); l != "" {
				cur = append(cur, l)
			}
		}
	}
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d Go snippets, want the server, inject, disclose and client ones", len(blocks))
	}
	examples := map[string][]string{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "gateway") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(d.Name(), "example") || !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if l := codeLine(line); l != "" {
				examples[path] = append(examples[path], l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, block := range blocks {
		best, bestFile := -1, ""
		for path, lines := range examples {
			if n := matched(block, lines); n > best {
				best, bestFile = n, path
			}
		}
		if best < len(block) {
			t.Errorf("README.md Go snippet %d (%q...) is not in any example file; closest %s, which lacks %q",
				i+1, block[0], bestFile, block[best])
		}
	}
}

// matched returns how many lines of block appear, in order, in lines.
func matched(block, lines []string) int {
	n := 0
	for _, l := range lines {
		if n < len(block) && l == block[n] {
			n++
		}
	}
	return n
}

// codeLine returns line without its trailing comment and with its spacing
// normalized; "" for a blank line, a comment or "...".
func codeLine(line string) string {
	var quote byte
	end := len(line)
	for i := 0; i < len(line) && end == len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\' && quote != '`':
			i++ // an escaped character
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '`' || c == '\'':
			quote = c
		case strings.HasPrefix(line[i:], "//"):
			end = i
		}
	}
	line = strings.Join(strings.Fields(line[:end]), " ")
	if line == "..." {
		return ""
	}
	return line
}
