// Package foldertool is a folder manager whose tools ask the user through
// resolvers ([github.com/preflightmcp/preflight/inject]) before they act:
//
//   - delete_folder deletes an empty folder at once and, for a non-empty
//     one, asks the user to confirm (a form with one boolean) first; a
//     decline or cancel deletes nothing and says so;
//   - rename_folder asks for the new name, then asks to confirm the rename
//     with that name in the question: a chain, where one resolver's answer
//     is used by the next question;
//   - describe_folder asks the client's model to summarise the folder's
//     listing (sampling).
//
// delete_folder is also resolvable (tools/resolve): deleting an empty
// folder is not destructive and needs no confirmation, deleting a
// non-empty one is and does. Resolution only
// reads the folder; it never runs the resolvers that ask.
//
// Every path names a folder inside the root directory, never the root
// itself: a path is cleaned first, and one that is empty, absolute, leaves
// the root ("..") or cleans to the root ("x/..", "./x/..") is refused with
// a tool error before anything is asked or touched.
package foldertool

//lint:file-ignore SA1019 describe_folder demonstrates sampling, deprecated by protocol 2026-07-28 (SEP-2577) and still offered by clients during the deprecation window.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/resolve"
)

// PathArgs are the arguments shared by the tools.
type PathArgs struct {
	Path string `json:"path" jsonschema:"folder path, relative to the server's root directory"`
}

// ConfirmDelete is the form of delete_folder's question.
type ConfirmDelete struct {
	Delete bool `json:"delete" jsonschema:"delete the folder and everything in it"`
}

// NewName is the form of rename_folder's first question.
type NewName struct {
	Name string `json:"name" jsonschema:"the folder's new name"`
}

// ConfirmRename is the form of rename_folder's second question.
type ConfirmRename struct {
	Rename bool `json:"rename" jsonschema:"rename the folder"`
}

type deleteArgs struct {
	Path    string                         `json:"path" jsonschema:"folder path, relative to the server's root directory"`
	Confirm inject.Elicited[ConfirmDelete] `json:"-" inject:"confirm_delete"`
}

type renameArgs struct {
	Path    string  `json:"path" jsonschema:"folder path, relative to the server's root directory"`
	NewName NewName `json:"-" inject:"new_name"`
	Go      bool    `json:"-" inject:"confirm_rename"`
}

type describeArgs struct {
	Path    string `json:"path" jsonschema:"folder path, relative to the server's root directory"`
	Summary string `json:"-" inject:"summary"`
}

// NewServer returns a server named "folders" with the three tools on
// root. opts may be nil.
func NewServer(root *os.Root, opts *inject.Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "folders", Version: "v0.1.0"}, nil)
	Add(s, resolve.NewServer(s, nil), inject.NewInjector(opts), root)
	return s
}

// Add adds the tools to s: delete_folder through rs, to make it
// resolvable too.
func Add(s *mcp.Server, rs *resolve.Server, inj *inject.Injector, root *os.Root) {
	t, h := inject.Tool(inj, &mcp.Tool{
		Name:        "delete_folder",
		Description: "Delete a folder. An empty folder is deleted at once; for a folder with content, the user is asked to confirm first.",
	}, deleteFolder(root), confirmDelete(root))
	t.Annotations = &mcp.ToolAnnotations{DestructiveHint: hints.Bool(true), OpenWorldHint: hints.Bool(false), IdempotentHint: true}
	t.Meta = hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true), Idempotent: hints.Bool(true)}.Write(nil)
	rs.AddTool(t, h, resolveDelete(root))

	inject.AddTool(s, inj, &mcp.Tool{
		Name:        "rename_folder",
		Description: "Rename a folder; asks the user for the new name, then to confirm.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: hints.Bool(false), OpenWorldHint: hints.Bool(false)},
		Meta:        hints.Hints{Effect: hints.EffectWrite, RequiresConfirmation: hints.Bool(true), Idempotent: hints.Bool(false)}.Write(nil),
	}, renameFolder(root), askNewName(root), confirmRename)

	inject.AddTool(s, inj, &mcp.Tool{
		Name:        "describe_folder",
		Description: "Describe a folder in one sentence, written by the client's model from the folder's listing.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, describeFolder, summarise(root))
}

// folderPath cleans p and returns it if it names a folder inside the root:
// not empty, not absolute, not leaving the root, and not the root itself.
// Every tool and resolver calls it before it asks or touches anything.
func folderPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty: give a folder path relative to the root directory")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("%s: path is absolute: give a folder path relative to the root directory", p)
	}
	c := filepath.Clean(p)
	if c == "." {
		return "", fmt.Errorf("%s: path is the root directory itself: give a folder inside it", p)
	}
	if !filepath.IsLocal(c) {
		return "", fmt.Errorf("%s: path is outside the root directory: give a path relative to it, without \"..\"", p)
	}
	return c, nil
}

// listing returns the names in the folder at path (a [folderPath]),
// directories with a trailing slash.
// The folder is opened without blocking, so that a named pipe in its
// place is refused instead of holding the call for ever.
func listing(root *os.Root, path string) ([]string, error) {
	f, err := root.OpenFile(path, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, describe(path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, describe(path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", path)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, describe(path, err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
		if e.IsDir() {
			names[i] += "/"
		}
	}
	sort.Strings(names)
	return names, nil
}

func describe(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such folder", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if strings.Contains(pe.Err.Error(), "escapes") {
			return fmt.Errorf("%s: path is outside the root directory", path)
		}
		return fmt.Errorf("%s: %v", path, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// confirmDelete asks only for a folder that has content.
func confirmDelete(root *os.Root) *inject.Resolver {
	return inject.NewResolver("confirm_delete", func(ctx context.Context, in struct {
		Path string `arg:"path"`
	}) (inject.Elicited[ConfirmDelete], error) {
		path, err := folderPath(in.Path)
		if err != nil {
			return inject.Elicited[ConfirmDelete]{}, err
		}
		names, err := listing(root, path)
		if err != nil {
			return inject.Elicited[ConfirmDelete]{}, err
		}
		if len(names) == 0 {
			return inject.Elicited[ConfirmDelete]{Action: inject.Accept, Data: ConfirmDelete{Delete: true}}, nil
		}
		return inject.Elicit[ConfirmDelete](ctx, fmt.Sprintf("Delete %s and the %d entries in it (%s)?", path, len(names), preview(names)))
	})
}

func preview(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + ", ..."
	}
	return strings.Join(names, ", ")
}

func deleteFolder(root *os.Root) inject.ToolHandler[deleteArgs] {
	return func(_ context.Context, _ *inject.Request, in deleteArgs) (*mcp.CallToolResult, error) {
		// The resolver refused such a path before asking; check again
		// here, right before the one call that can remove a tree.
		path, err := folderPath(in.Path)
		if err != nil {
			return nil, err
		}
		switch {
		case in.Confirm.Action == inject.Decline:
			return text(fmt.Sprintf("declined: %s was not deleted", path)), nil
		case in.Confirm.Action == inject.Cancel:
			return text(fmt.Sprintf("cancelled: %s was not deleted", path)), nil
		case !in.Confirm.Data.Delete:
			return text(fmt.Sprintf("kept: you chose not to delete %s", path)), nil
		}
		if err := root.RemoveAll(path); err != nil {
			return nil, describe(path, err)
		}
		return text("deleted: " + path), nil
	}
}

// resolveDelete is delete_folder's tools/resolve answer: it reads the
// folder, never asks.
func resolveDelete(root *os.Root) resolve.Resolver {
	return resolve.ResolverFunc(func(_ context.Context, c *resolve.Call) (resolve.Resolution, error) {
		arg, _ := c.Arguments["path"].(string)
		path, err := folderPath(arg)
		var names []string
		if err == nil {
			names, err = listing(root, path)
		}
		r := resolve.Resolution{
			Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true},
			Hints:       hints.Hints{Effect: hints.EffectDelete, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(true)},
		}
		if err == nil && len(names) == 0 {
			// Nothing in it: removing it changes the tree but loses no
			// data, and the tool does not ask.
			r.Annotations.DestructiveHint = false
			r.Hints.Effect = hints.EffectWrite
			r.Hints.RequiresConfirmation = hints.Bool(false)
		}
		return r, nil
	})
}

// askNewName asks for the new name of an existing folder.
func askNewName(root *os.Root) *inject.Resolver {
	return inject.NewResolver("new_name", func(ctx context.Context, in struct {
		Path string `arg:"path"`
	}) (inject.Elicited[NewName], error) {
		path, err := folderPath(in.Path)
		if err != nil {
			return inject.Elicited[NewName]{}, err
		}
		if err := isFolder(root, path); err != nil {
			return inject.Elicited[NewName]{}, err
		}
		return inject.Elicit[NewName](ctx, fmt.Sprintf("New name for %s?", path))
	})
}

// isFolder returns nil if path (a [folderPath]) is a folder in root.
func isFolder(root *os.Root, path string) error {
	fi, err := root.Lstat(path)
	if err != nil {
		return describe(path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a folder", path)
	}
	return nil
}

// checkName returns an error if name cannot be a folder's new name.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("%q is not a folder name: give a name without slashes", name)
	}
	return nil
}

// confirmRename is the second question of the chain: it names the answer
// to the first.
var confirmRename = inject.NewResolver("confirm_rename", func(ctx context.Context, in struct {
	Path    string  `arg:"path"`
	NewName NewName `inject:"new_name"`
}) (bool, error) {
	path, err := folderPath(in.Path)
	if err != nil {
		return false, err
	}
	if err := checkName(in.NewName.Name); err != nil {
		return false, err
	}
	ans, err := inject.Elicit[ConfirmRename](ctx, fmt.Sprintf("Rename %s to %s?", path, in.NewName.Name))
	if err != nil {
		return false, err
	}
	return ans.Accepted() && ans.Data.Rename, nil
})

func renameFolder(root *os.Root) inject.ToolHandler[renameArgs] {
	return func(_ context.Context, _ *inject.Request, in renameArgs) (*mcp.CallToolResult, error) {
		path, err := folderPath(in.Path)
		if err != nil {
			return nil, err
		}
		if !in.Go {
			return text(fmt.Sprintf("kept: %s was not renamed", path)), nil
		}
		name := in.NewName.Name
		if err := checkName(name); err != nil {
			return nil, err
		}
		to := filepath.Join(filepath.Dir(path), name)
		if err := root.Rename(path, to); err != nil {
			return nil, describe(path, err)
		}
		return text(fmt.Sprintf("renamed: %s -> %s", path, to)), nil
	}
}

func summarise(root *os.Root) *inject.Resolver {
	return inject.NewResolver("summary", func(ctx context.Context, in struct {
		Path string `arg:"path"`
	}) (string, error) {
		path, err := folderPath(in.Path)
		if err != nil {
			return "", err
		}
		names, err := listing(root, path)
		if err != nil {
			return "", err
		}
		res, err := inject.Sample(ctx, &mcp.CreateMessageParams{
			MaxTokens:    100,
			SystemPrompt: "You describe folders in one short sentence.",
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{
				Text: fmt.Sprintf("Describe the folder %s, which holds: %s", path, strings.Join(names, ", ")),
			}}},
		})
		if err != nil {
			return "", err
		}
		if t, ok := res.Content.(*mcp.TextContent); ok {
			return t.Text, nil
		}
		return "", fmt.Errorf("the client's model answered with %T, not text", res.Content)
	})
}

func describeFolder(_ context.Context, _ *inject.Request, in describeArgs) (*mcp.CallToolResult, error) {
	return text(in.Summary), nil
}
