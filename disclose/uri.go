package disclose

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultURI is the URI of the tool_descriptions resource, as in seed 004
// section 4.1.
const DefaultURI = "resource:///tool_descriptions"

// Bounds on one tool_descriptions read.
const (
	// DefaultMaxToolsPerRead is how many distinct tool names one read may
	// select unless [Options.MaxToolsPerRead] says otherwise.
	DefaultMaxToolsPerRead = 64
	// maxNameLen bounds one tool name in a selection (the MCP spec
	// recommends at most 128 characters).
	maxNameLen = 256
)

// SelectionURI returns the URI that reads the full descriptions of tools
// from the resource at base: base?tools=a,b. Each name is query-escaped,
// so a name holding a comma stays one name; names as MCP recommends them
// ([A-Za-z0-9_.-]) are written as they are.
func SelectionURI(base string, tools ...string) string {
	var b strings.Builder
	b.WriteString(base)
	b.WriteString("?tools=")
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(url.QueryEscape(t))
	}
	return b.String()
}

// selectionError is the error ParseSelection returns; missing marks a
// MISSING_TOOL_SELECTION, anything else is INVALID_TOOL_SELECTION.
type selectionError struct {
	missing bool
	msg     string
}

func (e *selectionError) Error() string { return e.msg }

// ParseSelection parses the URI of a tool_descriptions read against the
// resource's base URI. It returns ok false if uri is not the resource's
// (another resource; the caller passes the read on). Otherwise it returns
// the selected tool names, in order, without duplicates, or an error: a
// missing or empty tools parameter (MISSING_TOOL_SELECTION), or a
// malformed one (INVALID_TOOL_SELECTION).
//
// The query is split on '&'; every tools parameter counts (tools=a&tools=b
// is a,b); other parameters are ignored. A value is split on literal
// commas first and each piece is then unescaped ('+' is a space), so
// %2C is a comma inside a name. Pieces are trimmed of spaces; empty pieces
// are skipped. A fragment is ignored.
func ParseSelection(base, uri string, max int) (tools []string, ok bool, err error) {
	rest, found := strings.CutPrefix(uri, base)
	if !found {
		return nil, false, nil
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" {
		return nil, true, &selectionError{missing: true, msg: "no tools parameter"}
	}
	query, isQuery := strings.CutPrefix(rest, "?")
	if !isQuery {
		return nil, false, nil // resource:///tool_descriptions_other: not ours
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(query, "&") {
		key, value, _ := strings.Cut(part, "=")
		k, kerr := url.QueryUnescape(key)
		if kerr != nil || k != "tools" {
			continue
		}
		for piece := range strings.SplitSeq(value, ",") {
			name, uerr := url.QueryUnescape(piece)
			if uerr != nil {
				return nil, true, &selectionError{msg: fmt.Sprintf("malformed tool name %q in the tools parameter: %v", piece, uerr)}
			}
			name = strings.TrimSpace(name)
			if name == "" || seen[name] {
				continue
			}
			if len(name) > maxNameLen {
				return nil, true, &selectionError{msg: fmt.Sprintf("a tool name in the tools parameter is longer than %d bytes", maxNameLen)}
			}
			seen[name] = true
			tools = append(tools, name)
			if max > 0 && len(tools) > max {
				return nil, true, &selectionError{msg: fmt.Sprintf("too many tools in one read: at most %d; read them in several requests", max)}
			}
		}
	}
	if len(tools) == 0 {
		return nil, true, &selectionError{missing: true, msg: "no tool names in the tools parameter"}
	}
	return tools, true, nil
}
