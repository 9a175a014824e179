package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// Kinds of [Target].
const (
	KindServer  = "server"
	KindCatalog = "catalog"
)

// Shapes of tool resolution.
const (
	ShapeExtension = "extension"
	ShapeSeed      = "seed"
)

// A Target is what lint knows of one server: its tools as listed, and, for
// a live server, its declared capabilities and the answers to every
// tools/resolve probe. [Observe] and [ReadCatalog] make one; [Run] checks
// it; package safety turns it into safety tables.
type Target struct {
	// Kind is KindServer (a live server) or KindCatalog (a file).
	Kind string `json:"kind"`
	// Source is the URL, the command line or the file.
	Source string `json:"source"`
	// Server is the server's name and version, when known.
	Server *mcp.Implementation `json:"server,omitempty"`
	// ProtocolVersion is the negotiated (or catalogued) protocol version.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Capabilities are the tool-resolution capabilities the server
	// declared, for a live server (nil for a catalog).
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// Tools are the tools as listed, in order.
	Tools []*Tool `json:"tools"`
	// Unknown is the answer to tools/resolve for a tool that does not
	// exist, when the server was probed.
	Unknown *Probe `json:"unknownTool,omitempty"`
}

// Capabilities are the tool-resolution capabilities a server declared.
type Capabilities struct {
	// Extension: capabilities.extensions["io.modelcontextprotocol/tool-resolution"]
	// in the handshake of a client that declared the extension.
	Extension bool `json:"extension"`
	// Seed: capabilities.tools.resolve true, in either handshake.
	Seed bool `json:"seed"`
}

// A Tool is one tool as listed, read from the raw JSON so that absent
// fields stay absent.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the raw input schema; nil when absent.
	InputSchema any `json:"inputSchema,omitempty"`
	// Annotations are the raw annotations; nil when the tool has none.
	Annotations *Annotations `json:"annotations,omitempty"`
	// Meta is the tool's _meta.
	Meta map[string]any `json:"_meta,omitempty"`
	// Hints are the valid policy hints in Meta; HintError reports the
	// invalid ones.
	Hints     hints.Hints `json:"-"`
	HintError error       `json:"-"`
	// ExtensionMarker: _meta["io.modelcontextprotocol/tool-resolution"].resolvable.
	ExtensionMarker bool `json:"extensionMarker,omitempty"`
	// SeedMarker: the seed's top-level "resolve": true.
	SeedMarker bool `json:"seedMarker,omitempty"`
	// Line is the line of the tool's opening brace in a catalog file.
	Line int `json:"line,omitempty"`
	// Variants are the tools/resolve probes with valid arguments, for a
	// resolvable tool of a live server.
	Variants []*Variant `json:"variants,omitempty"`
	// Invalid are the probes with invalid arguments.
	Invalid []*Probe `json:"invalid,omitempty"`
	// Coverage says how the variants were chosen.
	Coverage *Coverage `json:"coverage,omitempty"`
}

// Resolvable reports whether the tool carries a resolvable marker in
// either shape.
func (t *Tool) Resolvable() bool { return t.ExtensionMarker || t.SeedMarker }

// Annotations are a tool's annotations as listed: a nil hint was absent.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Empty reports whether none of the four hints is set.
func (a *Annotations) Empty() bool {
	return a == nil || a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil
}

// MCP returns the annotations as the SDK's type (nil for nil), for
// [policy.Evaluate] and [preflight.AnnotationsOf].
func (a *Annotations) MCP() *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	out := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
	if a.ReadOnlyHint != nil {
		out.ReadOnlyHint = *a.ReadOnlyHint
	}
	if a.IdempotentHint != nil {
		out.IdempotentHint = *a.IdempotentHint
	}
	return out
}

// Effective returns the four hints with the protocol's defaults applied.
func (a *Annotations) Effective() preflight.Annotations { return preflight.AnnotationsOf(a.MCP()) }

// A Variant is one set of valid arguments and what tools/resolve said
// about it, in each shape that was probed.
type Variant struct {
	// Arguments are the complete arguments sent.
	Arguments map[string]any `json:"arguments"`
	// Label names the variant by its enumerated arguments, such as
	// "action=read"; "" when nothing was enumerated.
	Label string `json:"label"`
	// Probes are the answers, one per shape probed.
	Probes []*Probe `json:"probes"`
}

// Resolution returns the variant's first successful, well-formed
// resolution, preferring the extension shape; nil if none.
func (v *Variant) Resolution() *Probe {
	for _, shape := range []string{ShapeExtension, ShapeSeed} {
		for _, p := range v.Probes {
			if p.Shape == shape && p.OK() {
				return p
			}
		}
	}
	return nil
}

// A Probe is one tools/resolve request and its answer.
type Probe struct {
	// Shape is the shape the request asked for: ShapeExtension (the
	// client declared the extension) or ShapeSeed (it declared nothing).
	Shape string `json:"shape"`
	// Arguments are the arguments sent.
	Arguments map[string]any `json:"arguments"`
	// Kind says, for an invalid probe, how the arguments break the schema.
	Kind string `json:"kind,omitempty"`
	// Raw is the result as received; nil on error.
	Raw json.RawMessage `json:"result,omitempty"`
	// Code is the JSON-RPC error code, 0 if none; Err is the error's text
	// (a transport failure has Err and no Code).
	Code int64  `json:"code,omitempty"`
	Err  string `json:"error,omitempty"`
	// Malformed says why a result is unusable; "" if it is well formed.
	Malformed string `json:"malformed,omitempty"`
	// GotShape is the shape the result came in.
	GotShape string `json:"gotShape,omitempty"`
	// Annotations and Hints are the resolution's, when well formed.
	Annotations *preflight.Annotations `json:"annotations,omitempty"`
	Hints       hints.Hints            `json:"-"`
	HintError   error                  `json:"-"`
	// Again is the decision-relevant difference found when the same
	// request was sent a second time, "" if the answers agreed.
	Again string `json:"again,omitempty"`
}

// OK reports whether the probe got a well-formed resolution.
func (p *Probe) OK() bool {
	return p != nil && p.Err == "" && p.Malformed == "" && p.Annotations != nil
}

// Coverage says how a resolvable tool's argument variants were chosen.
type Coverage struct {
	// Enumerated names the arguments whose values were enumerated.
	Enumerated []string `json:"enumerated"`
	// Variants is the number of variants probed.
	Variants int `json:"variants"`
	// Capped reports that there were more combinations than the limit.
	Capped bool `json:"capped,omitempty"`
	// Skipped counts generated arguments that failed local validation
	// against the input schema and were not sent.
	Skipped int `json:"skipped,omitempty"`
}

// ParseTool reads one tool from its raw JSON.
func ParseTool(raw json.RawMessage) (*Tool, error) {
	var t Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	var top struct {
		Resolve any `json:"resolve"`
	}
	_ = json.Unmarshal(raw, &top)
	t.SeedMarker = top.Resolve == true
	if m, ok := t.Meta[preflight.ExtensionToolResolution].(map[string]any); ok {
		t.ExtensionMarker = m["resolvable"] == true
	}
	t.Hints, t.HintError = hints.Read(t.Meta)
	return &t, nil
}

// ReadCatalog reads a catalog file: a tools/list result ({"tools": [...]},
// optionally with "server" and "protocolVersion" beside it, as the files in
// testdata/catalogs are), a JSON-RPC response carrying one, or a bare array
// of tools.
func ReadCatalog(path string) (*Target, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// ParseCatalog reads a catalog from data; see [ReadCatalog].
func ParseCatalog(data []byte) (*Target, error) {
	data = bytes.TrimSpace(data)
	var doc struct {
		Server          *mcp.Implementation `json:"server"`
		ProtocolVersion string              `json:"protocolVersion"`
		Tools           []json.RawMessage   `json:"tools"`
		Result          *struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &doc.Tools); err != nil {
			return nil, fmt.Errorf("not a JSON array of tools: %w", err)
		}
	default:
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("not a tools/list result: %w", err)
		}
		if doc.Tools == nil && doc.Result != nil {
			doc.Tools = doc.Result.Tools
		}
		if doc.Tools == nil {
			return nil, errors.New(`not a tools/list result: no "tools" array (want {"tools": [...]}, a JSON-RPC response holding one, or an array of tools)`)
		}
	}
	t := &Target{Kind: KindCatalog, ProtocolVersion: doc.ProtocolVersion, Tools: []*Tool{}}
	if doc.Server != nil {
		t.Server = &mcp.Implementation{Name: doc.Server.Name, Version: doc.Server.Version, Title: doc.Server.Title}
	}
	lines := toolLines(data)
	for i, raw := range doc.Tools {
		tool, err := ParseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		if i < len(lines) {
			tool.Line = lines[i]
		}
		t.Tools = append(t.Tools, tool)
	}
	return t, nil
}

// toolLines returns the line of each element of the tools array in data
// (the top-level array, or "tools" in the top-level object or in its
// "result"), for locations in SARIF and text output.
func toolLines(data []byte) []int {
	dec := json.NewDecoder(bytes.NewReader(data))
	// lineOfNext is the line where the next value starts.
	lineOfNext := func() int {
		off := int(dec.InputOffset())
		for off < len(data) && strings.ContainsRune(" \t\r\n,:", rune(data[off])) {
			off++
		}
		return 1 + bytes.Count(data[:off], []byte("\n"))
	}
	var out []int
	readArray := func() {
		for dec.More() {
			out = append(out, lineOfNext())
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return
			}
		}
	}
	var readObject func(depth int) bool
	readObject = func(depth int) bool {
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return false
			}
			switch key {
			case "tools":
				if tok, err := dec.Token(); err == nil && tok == json.Delim('[') {
					readArray()
					return true
				}
				return false
			case "result":
				if depth == 0 {
					if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
						if readObject(1) {
							return true
						}
						continue
					}
					return false
				}
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
		}
		_, _ = dec.Token() // the closing brace
		return false
	}
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	switch tok {
	case json.Delim('['):
		readArray()
	case json.Delim('{'):
		readObject(0)
	}
	return out
}
