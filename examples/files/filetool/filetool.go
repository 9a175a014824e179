// Package filetool is the manage_files tool of seed 000 (SEP-1862) on a
// real directory: one tool that reads, appends to, replaces or deletes a
// file, declared resolvable with a table keyed by its action argument, so a
// client learns that read is read-only and delete is destructive before
// calling.
//
// Every path is confined to the root directory (through [os.Root]): a path
// that leaves it, by "..", an absolute path or a symbolic link, is refused
// with a tool error.
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

// Add adds manage_files, working in root, to rs.
func Add(rs *resolve.Server, root *os.Root) {
	resolve.AddTool(rs, Tool(), handler(root), Table)
}

// NewServer returns a server named "files" with manage_files on root and
// tool resolution installed.
func NewServer(root *os.Root, opts *resolve.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v0.1.0"}, nil)
	Add(resolve.NewServer(s, opts), root)
	return s
}

func handler(root *os.Root) mcp.ToolHandlerFor[Args, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, any, error) {
		text, err := run(root, a)
		if err != nil {
			return nil, nil, err // reported as a tool error (isError)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	}
}

func run(root *os.Root, a Args) (string, error) {
	if a.Path == "" {
		return "", errors.New("path is empty: give a file path relative to the root directory")
	}
	if !filepath.IsLocal(a.Path) {
		return "", fmt.Errorf("%s: path is outside the root directory: give a path relative to it, without \"..\"", a.Path)
	}
	switch a.Action {
	case "read":
		f, err := root.Open(a.Path)
		if err != nil {
			return "", describe(a.Path, err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		if err != nil {
			return "", describe(a.Path, err)
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
		f, err := root.OpenFile(a.Path, flag, 0o644)
		if err != nil {
			return "", describe(a.Path, err)
		}
		if _, err := f.WriteString(a.Content); err != nil {
			f.Close()
			return "", describe(a.Path, err)
		}
		if err := f.Close(); err != nil {
			return "", describe(a.Path, err)
		}
		verb := map[string]string{"append": "appended", "replace": "replaced"}[a.Action]
		return fmt.Sprintf("%s %d bytes: %s", verb, len(a.Content), a.Path), nil
	case "delete":
		err := root.Remove(a.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return "already absent: " + a.Path, nil
		}
		if err != nil {
			return "", describe(a.Path, err)
		}
		return "deleted: " + a.Path, nil
	}
	// Unreachable through the SDK, which validates the enum first.
	return "", fmt.Errorf("unknown action %q (allowed: read, append, replace, delete)", a.Action)
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
