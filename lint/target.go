package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// Descriptions is the URI of the tool_descriptions resource the full
	// tool definitions were read from, when the server lists its tools
	// minimally (progressive disclosure); "" otherwise.
	Descriptions string `json:"descriptions,omitempty"`
	// Notes say what could not be observed, such as a shape that was not
	// probed.
	Notes []string `json:"notes,omitempty"`
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
	// Described reports that the description, title, schemas and
	// annotations come from the server's tool_descriptions resource (the
	// server lists the tool minimally: progressive disclosure).
	Described bool `json:"described,omitempty"`

	// raw is the JSON the tool was read from.
	raw json.RawMessage
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
	t.raw = append(json.RawMessage(nil), raw...)
	return &t, nil
}

// MCP decodes the tool as the SDK's type, from the JSON it was read from
// (with the full definition's fields when [Observe] read them from a
// tool_descriptions resource).
func (t *Tool) MCP() (*mcp.Tool, error) {
	raw := t.raw
	if raw == nil {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var out mcp.Tool
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return &out, nil
}

// ReadCatalog reads a catalog file; see [ParseCatalog] for the formats and
// the errors. Errors name the file.
func ReadCatalog(path string) (*Target, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, err
	}
	t, err := ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// catalogFormats says what a catalog may be, for error messages.
const catalogFormats = `want a tools/list result ({"tools": [...]}), a JSON-RPC response holding one, or an array of tools`

// ParseCatalog reads a catalog: a tools/list result ({"tools": [...]},
// optionally with "server" and "protocolVersion" beside it, as the files in
// testdata/catalogs are), a JSON-RPC response carrying one, or a bare array
// of tools. Every tool must be an object with a name, and a catalog
// without tools is an error (there would be nothing to check). Errors say
// what is wrong in words, with the line and column of a syntax error and
// the index and line of a bad tool.
func ParseCatalog(data []byte) (*Target, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("the file is empty: " + catalogFormats)
	}
	if err := syntaxCheck(data); err != nil {
		return nil, err
	}
	var tools json.RawMessage
	var doc struct {
		Server          json.RawMessage `json:"server"`
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
		Tools           json.RawMessage `json:"tools"`
		Result          json.RawMessage `json:"result"`
		Error           *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	switch trimmed[0] {
	case '[':
		tools = trimmed
	case '{':
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, fmt.Errorf("not a tools/list result: %w", err)
		}
		tools = doc.Tools
		if tools == nil && doc.Result != nil {
			var res struct {
				Tools json.RawMessage `json:"tools"`
			}
			if json.Unmarshal(doc.Result, &res) != nil {
				return nil, fmt.Errorf(`"result" is %s, not a tools/list result: %s`, jsonKind(doc.Result), catalogFormats)
			}
			tools = res.Tools
		}
		if tools == nil && doc.Error != nil {
			return nil, fmt.Errorf("a JSON-RPC error response (%v: %q), not a tools/list result", doc.Error.Code, oneLine(doc.Error.Message))
		}
		if tools == nil {
			return nil, errors.New(`no "tools" array: ` + catalogFormats)
		}
	default:
		return nil, fmt.Errorf("%s, not a catalog: %s", jsonKind(trimmed), catalogFormats)
	}
	var raws []json.RawMessage
	if json.Unmarshal(tools, &raws) != nil {
		return nil, fmt.Errorf(`"tools" is %s, not an array of tools`, jsonKind(tools))
	}
	if len(raws) == 0 {
		return nil, errors.New("the catalog lists no tools: nothing to check")
	}
	t := &Target{Kind: KindCatalog, Tools: []*Tool{}}
	var server mcp.Implementation
	if doc.Server != nil && json.Unmarshal(doc.Server, &server) == nil && server.Name+server.Version+server.Title != "" {
		t.Server = &mcp.Implementation{Name: server.Name, Version: server.Version, Title: server.Title}
	}
	if doc.ProtocolVersion != nil {
		_ = json.Unmarshal(doc.ProtocolVersion, &t.ProtocolVersion)
	}
	lines := toolLines(data)
	for i, raw := range raws {
		where := fmt.Sprintf("tools[%d]", i)
		if i < len(lines) {
			where += fmt.Sprintf(" (line %d)", lines[i])
		}
		if k := jsonKind(raw); k != "an object" {
			return nil, fmt.Errorf("%s is %s, not a tool object", where, k)
		}
		tool, err := ParseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", where, decodeProblem(err))
		}
		if tool.Name == "" {
			return nil, fmt.Errorf(`%s has no "name": every tool needs one`, where)
		}
		if i < len(lines) {
			tool.Line = lines[i]
		}
		t.Tools = append(t.Tools, tool)
	}
	return t, nil
}

// syntaxCheck reports the first syntax error in data with its line and
// column.
func syntaxCheck(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			off := int(dec.InputOffset())
			line, col := position(data, off)
			return fmt.Errorf("not valid JSON: more than one value (the second starts near line %d, column %d)", line, col)
		}
		return nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := position(data, int(se.Offset)-1) // Offset is just past the bad byte
		return fmt.Errorf("not valid JSON: line %d, column %d: %s", line, col, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not valid JSON: it ends too early (truncated?)")
	}
	return fmt.Errorf("not valid JSON: %w", err)
}

// position returns the line and column (in bytes, from 1) of offset off.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// jsonKind names the kind of a JSON value: "an object", "an array", "a
// string", "a number", "a boolean" or "null".
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeProblem words an error decoding a tool: the field and the types.
func decodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the tool"
		}
		return fmt.Sprintf("%s is %s, want %s", field, article(te.Value), te.Type.String())
	}
	return err.Error()
}

func article(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	case "":
		return "a value of the wrong type"
	}
	return "a " + kind
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
