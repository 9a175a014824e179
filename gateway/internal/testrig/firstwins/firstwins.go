// Package firstwins is a test rig: an MCP server (cmd/firstwins) whose JSON
// reader keeps the first of repeated object members, at every depth, as
// gjson-style parsers and many Python and JavaScript servers do, where Go's
// encoding/json (and so the gateway) keeps the last. Put behind the gateway,
// it shows whether an ambiguous request can be judged one way and executed
// another: its journal records each tool call as it read it.
package firstwins

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// maxDepth is encoding/json's nesting limit, kept so that both readers
// refuse the same input.
const maxDepth = 10000

// FirstWins decodes data as json.Unmarshal does into an any (objects as
// map[string]any, arrays as []any, numbers as float64), except that an
// object with a repeated member keeps the first value, at every depth. Keys
// are unescaped before they are compared. It returns an error for any input
// json.Unmarshal refuses.
func FirstWins(data []byte) (any, error) { return decode(data, false) }

// FirstWinsNumber is like [FirstWins] but decodes numbers as json.Number, as
// a json.Decoder does after UseNumber. The command reads messages with it,
// so that ids and arguments keep their exact digits.
func FirstWinsNumber(data []byte) (any, error) { return decode(data, true) }

// container is an object or array under construction.
type container struct {
	obj     map[string]any // nil for an array
	arr     []any
	key     string
	haveKey bool
}

func decode(data []byte, useNumber bool) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if useNumber {
		dec.UseNumber()
	}
	var stack []*container
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		var val any
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxDepth {
					return nil, errors.New("firstwins: exceeded max depth")
				}
				c := &container{arr: []any{}}
				if t == '{' {
					c.obj = map[string]any{}
				}
				stack = append(stack, c)
				continue
			default: // '}' or ']'
				c := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if c.obj != nil {
					val = c.obj
				} else {
					val = c.arr
				}
			}
		default:
			if n := len(stack); n > 0 && stack[n-1].obj != nil && !stack[n-1].haveKey {
				// Token returns only strings in key position.
				stack[n-1].key, stack[n-1].haveKey = t.(string), true
				continue
			}
			val = tok
		}
		if len(stack) == 0 {
			if _, err := dec.Token(); err != io.EOF {
				if err == nil {
					err = errors.New("firstwins: invalid character after top-level value")
				}
				return nil, err
			}
			return val, nil
		}
		c := stack[len(stack)-1]
		if c.obj == nil {
			c.arr = append(c.arr, val)
			continue
		}
		if _, dup := c.obj[c.key]; !dup {
			c.obj[c.key] = val
		}
		c.haveKey = false
	}
}

// Entry is one line of the journal: a tool call the server executed, as it
// read it.
type Entry struct {
	Tool   string         `json:"tool"`
	Action string         `json:"action"`
	Path   string         `json:"path"`
	Args   map[string]any `json:"args"`
}

// ReadJournal returns the entries of the journal at path, oldest first
// (numbers in Args are float64). A journal that does not exist has none.
func ReadJournal(t testing.TB, path string) []Entry {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("firstwins journal: %v", err)
	}
	defer f.Close()
	var entries []Entry
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("firstwins journal %s: line %d: %v", path, len(entries)+1, err)
			}
			entries = append(entries, e)
		}
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("firstwins journal: %v", err)
		}
	}
}

const cmdPkg = "github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins/cmd/firstwins"

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Build builds cmd/firstwins once per test binary, into a temporary
// directory, and returns the path of the executable.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("no go tool on PATH: %v", err)
			return
		}
		dir, err := os.MkdirTemp("", "firstwins-bin-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "firstwins")
		if runtime.GOOS == "windows" {
			bin += ".exe"
		}
		if out, err := exec.Command(goBin, "build", "-o", bin, cmdPkg).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s: %v\n%s", cmdPkg, err, out)
			return
		}
		buildBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}
