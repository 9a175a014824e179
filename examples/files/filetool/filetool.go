// Package filetool is the manage_files tool of seed 000 (SEP-1862) on a
// real directory: one tool that reads, appends to, replaces or deletes a
// file, declared resolvable with a table keyed by its action argument, so a
// client learns that read is read-only and delete is destructive before
// calling.
//
// Every path is confined to the root directory (through [os.Root]): a path
// that leaves it, by "..", an absolute path or a symbolic link, is refused
// with a tool error. Only regular files are touched: a directory, a named
// pipe or a device is refused without blocking. A read returns a whole
// file of at most [DefaultMaxRead] bytes (see [Options]) or an error that
// says the file is too large. The call's context is honoured between
// chunks of a read or write.
package filetool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// Name is the tool's name.
const Name = "manage_files"

// Actions, in the order of seed 000's table.
var Actions = []string{"read", "append", "replace", "delete"}

// Args are the tool's arguments.
type Args struct {
	Path    string `json:"path" jsonschema:"file path, relative to the server's root directory"`
	Action  string `json:"action" jsonschema:"operation to perform: read, append, replace or delete"`
	Content string `json:"content,omitempty" jsonschema:"content for append and replace"`
}

// Table is the tool's resolution table: the annotations of seed 000 per
// action, and the policy hints (read is effect read; append and replace
// write; delete delete; replace and delete ask for confirmation). The
// tool's static annotations and hints are derived from it.
var Table = &resolve.Table{
	Argument: "action",
	Rows: map[string]resolve.Resolution{
		"read": {
			Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
			Hints:       hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(false)},
		},
		"append": {
			Annotations: preflight.Annotations{},
			Hints:       hints.Hints{Effect: hints.EffectWrite, Idempotent: hints.Bool(false), RequiresConfirmation: hints.Bool(false)},
		},
		"replace": {
			Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true},
			Hints:       hints.Hints{Effect: hints.EffectWrite, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(true)},
		},
		"delete": {
			Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true},
			Hints:       hints.Hints{Effect: hints.EffectDelete, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(true)},
		},
	},
}

// Tool returns the tool's definition before its annotations are derived.
func Tool() *mcp.Tool {
	schema, err := jsonschema.For[Args](nil)
	if err != nil {
		panic(err) // Args is a fixed, valid type
	}
	enum := make([]any, len(Actions))
	for i, a := range Actions {
		enum[i] = a
	}
	schema.Properties["action"].Enum = enum
	return &mcp.Tool{
		Name:        Name,
		Description: "Read, append, replace, or delete file contents",
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{Title: "Manage files"},
	}
}

// DefaultMaxRead is the largest file a read returns, unless
// [Options.MaxRead] says otherwise.
const DefaultMaxRead = 1 << 20

// Options configure manage_files. A nil *Options means the defaults.
type Options struct {
	// MaxRead bounds the size of a file that read returns; a larger file
	// is a tool error that says so. Zero means [DefaultMaxRead].
	MaxRead int64
}

// Add adds manage_files, working in root, to rs, with the default options.
func Add(rs *resolve.Server, root *os.Root) { AddWith(rs, root, nil) }

// AddWith adds manage_files, working in root, to rs. opts may be nil.
func AddWith(rs *resolve.Server, root *os.Root, opts *Options) {
	t := &tool{root: root, maxRead: DefaultMaxRead}
	if opts != nil && opts.MaxRead > 0 {
		t.maxRead = opts.MaxRead
	}
	resolve.AddTool(rs, Tool(), t.handle, Table)
}

// NewServer returns a server named "files" with manage_files on root and
// tool resolution installed.
func NewServer(root *os.Root, opts *resolve.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v0.1.0"}, nil)
	Add(resolve.NewServer(s, opts), root)
	return s
}

// tool is manage_files on one root.
type tool struct {
	root    *os.Root
	maxRead int64
}

func (t *tool) handle(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
	text, err := t.run(ctx, a)
	if err != nil {
		return nil, nil, err // reported as a tool error (isError)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

// chunk is how much is read or written between two looks at the call's
// context.
const chunk = 64 << 10

// run performs one action. Only regular files are read, written or
// deleted: opening a named pipe or a device could block the call for
// ever, so files are opened without blocking and checked before use. The
// call's context is checked before the file is touched and between chunks
// of a read or write.
func (t *tool) run(ctx context.Context, a Args) (string, error) {
	if a.Path == "" {
		return "", errors.New("path is empty: give a file path relative to the root directory")
	}
	if !filepath.IsLocal(a.Path) {
		return "", fmt.Errorf("%s: path is outside the root directory: give a path relative to it, without \"..\"", a.Path)
	}
	path := filepath.Clean(a.Path)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	switch a.Action {
	case "read":
		f, err := t.open(path, os.O_RDONLY)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := t.read(ctx, path, f)
		if err != nil {
			return "", err
		}
		return string(b), nil
	case "append", "replace":
		if a.Content == "" {
			return "", fmt.Errorf("content is required for %s", a.Action)
		}
		flag := os.O_WRONLY | os.O_CREATE | os.O_APPEND
		if a.Action == "replace" {
			flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		}
		f, err := t.open(path, flag)
		if err != nil {
			return "", err
		}
		if err := write(ctx, f, a.Content); err != nil {
			f.Close()
			return "", describe(path, err)
		}
		if err := f.Close(); err != nil {
			return "", describe(path, err)
		}
		verb := map[string]string{"append": "appended", "replace": "replaced"}[a.Action]
		return fmt.Sprintf("%s %d bytes: %s", verb, len(a.Content), path), nil
	case "delete":
		fi, err := t.root.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "already absent: " + path, nil
		}
		if err != nil {
			return "", describe(path, err)
		}
		if !fi.Mode().IsRegular() {
			return "", notRegular(path, fi.Mode())
		}
		err = t.root.Remove(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "already absent: " + path, nil
		}
		if err != nil {
			return "", describe(path, err)
		}
		return "deleted: " + path, nil
	}
	// Unreachable through the SDK, which validates the enum first.
	return "", fmt.Errorf("unknown action %q (allowed: read, append, replace, delete)", a.Action)
}

// open opens path without blocking (a named pipe with no writer would
// block a plain open for ever) and returns it only if it is a regular
// file.
func (t *tool) open(path string, flag int) (*os.File, error) {
	f, err := t.root.OpenFile(path, flag|nonBlocking, 0o644)
	if err != nil {
		// A pipe with no reader, a directory opened for writing: say
		// what is there rather than the system's words.
		if fi, serr := t.root.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
		return nil, describe(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, describe(path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// read reads f whole, refusing a file over t.maxRead bytes.
func (t *tool) read(ctx context.Context, path string, f *os.File) ([]byte, error) {
	tooBig := func() error {
		return fmt.Errorf("%s: the file is larger than %d bytes, the most a read returns", path, t.maxRead)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > t.maxRead {
		return nil, tooBig()
	}
	var b []byte
	buf := make([]byte, min(chunk, t.maxRead+1))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if int64(len(b)) > t.maxRead {
			return nil, tooBig() // it grew while being read
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, describe(path, err)
		}
	}
}

// write writes s to f in chunks, stopping when ctx ends.
func write(ctx context.Context, f *os.File, s string) error {
	for len(s) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(s), chunk)
		if _, err := f.WriteString(s[:n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory, not a file"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe, not a regular file"
	case mode&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		what = "a device, not a regular file"
	case mode&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	}
	return fmt.Errorf("%s: %s: manage_files works on regular files only", path, what)
}

// describe turns a file error into a message without the server's paths.
func describe(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", path)
	case isEscape(err):
		return fmt.Errorf("%s: path is outside the root directory", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", path, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent"
}
