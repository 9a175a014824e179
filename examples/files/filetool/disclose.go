package filetool

import (
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/resolve"
)

// Details are manage_files's examples and guidance, served in full by the
// tool_descriptions resource when progressive disclosure is on.
var Details = &disclose.Details{
	Examples: []disclose.Example{
		{Description: "Read a file", Input: map[string]any{"path": "notes.txt", "action": "read"}},
		{Description: "Append a line", Input: map[string]any{"path": "notes.txt", "action": "append", "content": "one more line\n"}},
		{Description: "Replace a file's content", Input: map[string]any{"path": "notes.txt", "action": "replace", "content": "fresh start\n"}},
		{Description: "Delete a file", Input: map[string]any{"path": "old.txt", "action": "delete"}},
	},
	UsageGuidance: map[string]any{
		"paths":           "Paths are relative to the server's root directory; absolute paths, '..' and symbolic links that leave it are refused.",
		"content":         "content is required for append and replace and ignored otherwise.",
		"resolve_first":   "replace and delete are destructive: resolve the call with tools/resolve to learn what it will do before calling.",
		"read_size_bound": "read returns a whole file of at most 1 MiB; a larger file is an error.",
	},
	ErrorGuidance: map[string]any{
		"no such file":                       "read of a missing file; delete of a missing file succeeds with 'already absent'.",
		"path is outside the root directory": "give a path relative to the root, without '..'.",
		"content is required":                "give content for append and replace.",
		"permission denied":                  "the server may not touch that file.",
		"not a regular file":                 "directories, named pipes and devices are refused; give the path of a regular file.",
		"the file is larger than":            "the file is too large to read whole through this tool.",
	},
}

// NewDisclosingServer returns [NewServer]'s server with progressive
// disclosure of tool descriptions installed (seed 004): manage_files is
// listed minimally, its full description (with [Details]) is served by the
// tool_descriptions resource, and a call is refused until that description
// was fetched in the caller's session or by its principal. Tool resolution
// works as before. ropts and dopts may be nil. manage_files's details are
// [Details], unless dopts.Source is set: then they come from the Source
// alone (a folder holding manage_files.json, say), reloaded as it changes.
func NewDisclosingServer(root *os.Root, ropts *resolve.ServerOptions, dopts *disclose.Options) (*mcp.Server, *disclose.Server) {
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v0.1.0"}, nil)
	ds := disclose.New(s, dopts) // before resolve: the cheaper order; either works
	Add(resolve.NewServer(s, ropts), root)
	if dopts == nil || dopts.Source == nil {
		ds.SetDetails(Name, Details)
	}
	return s, ds
}
