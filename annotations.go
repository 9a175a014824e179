package preflight

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Annotations are the four behaviour hints of a tool with every value
// explicit, as the extension shape of tools/resolve carries them. Use
// [AnnotationsOf] to read an [mcp.ToolAnnotations] with the core defaults
// applied.
type Annotations struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

// DefaultAnnotations are the core defaults of ToolAnnotations: not
// read-only, destructive, not idempotent, open world. They are the most
// conservative values, what a client must assume of a tool that says
// nothing.
var DefaultAnnotations = Annotations{DestructiveHint: true, OpenWorldHint: true}

// AnnotationsOf returns a's four hints with the core defaults applied to
// absent values; a nil a gives [DefaultAnnotations].
func AnnotationsOf(a *mcp.ToolAnnotations) Annotations {
	if a == nil {
		return DefaultAnnotations
	}
	out := Annotations{
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: true,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   true,
	}
	if a.DestructiveHint != nil {
		out.DestructiveHint = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		out.OpenWorldHint = *a.OpenWorldHint
	}
	return out
}

// ToolAnnotations converts a to the SDK's type with every hint set
// explicitly, keeping title.
func (a Annotations) ToolAnnotations(title string) *mcp.ToolAnnotations {
	d, o := a.DestructiveHint, a.OpenWorldHint
	return &mcp.ToolAnnotations{
		Title:           title,
		ReadOnlyHint:    a.ReadOnlyHint,
		DestructiveHint: &d,
		IdempotentHint:  a.IdempotentHint,
		OpenWorldHint:   &o,
	}
}

// WorstCase returns the most conservative annotations that bound every one
// of list: read-only only if all are, destructive if any non-read-only one
// is, idempotent only if every non-read-only one is, open world if any is.
// It is how a table of resolutions derives the static annotations of its
// tool, so that the two cannot drift (hints.Exceeds is the bound they
// set). An empty list gives [DefaultAnnotations].
func WorstCase(list ...Annotations) Annotations {
	if len(list) == 0 {
		return DefaultAnnotations
	}
	out := Annotations{ReadOnlyHint: true, IdempotentHint: true}
	for _, a := range list {
		out.ReadOnlyHint = out.ReadOnlyHint && a.ReadOnlyHint
		out.OpenWorldHint = out.OpenWorldHint || a.OpenWorldHint
		if !a.ReadOnlyHint {
			out.DestructiveHint = out.DestructiveHint || a.DestructiveHint
			out.IdempotentHint = out.IdempotentHint && a.IdempotentHint
		}
	}
	if out.ReadOnlyHint {
		out.DestructiveHint = false
	}
	return out
}
