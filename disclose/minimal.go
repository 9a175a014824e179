package disclose

import (
	"encoding/json"
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
)

// MetaShortDescription is the key in a tool's _meta under which its author
// may give the short description that [Minimal] lists instead of deriving
// one from the full description. Its value must be a non-empty string. The
// key is removed from the minimal listing (the value is its description).
const MetaShortDescription = "io.github.preflightmcp/shortDescription"

// ShortDescriptionLimit bounds, in characters (runes), a short description
// that [Minimal] derives from a tool's full description. An author-given
// one ([MetaShortDescription]) is used as given.
const ShortDescriptionLimit = 120

// SchemaLevel says how far [Minimal] simplifies a tool's input schema in
// tools/list. The zero value is [SchemaObject], the largest saving; the
// full schema is always served by the tool_descriptions resource, and
// arguments are always validated against it.
type SchemaLevel int

const (
	// SchemaObject replaces the input schema with {"type":"object"}, the
	// smallest schema MCP accepts. It validates exactly what SchemaOpen
	// does (additionalProperties is true when absent) in about 6 fewer
	// tokens per tool (o200k). It is the default.
	SchemaObject SchemaLevel = iota
	// SchemaOpen replaces the input schema with
	// {"type":"object","additionalProperties":true}, seed 004 section 3.1's
	// own example.
	SchemaOpen
	// SchemaTopLevel keeps the top-level property names and their types
	// (the "type" keyword only) and drops everything else: descriptions,
	// nested schemas, enums, defaults, examples, required. The result is
	// {"type":"object","properties":{...},"additionalProperties":true};
	// a property whose type is not given is listed as {}.
	SchemaTopLevel
	// SchemaFull keeps the input schema (and the output schema) exactly as
	// registered; only the description is shortened.
	SchemaFull
)

// String returns "object", "open", "toplevel" or "full".
func (l SchemaLevel) String() string {
	switch l {
	case SchemaOpen:
		return "open"
	case SchemaTopLevel:
		return "toplevel"
	case SchemaFull:
		return "full"
	case SchemaObject:
		return "object"
	}
	return "SchemaLevel(" + itoa(int(l)) + ")"
}

// ParseSchemaLevel parses "object", "open", "toplevel" or "full" (the
// names [SchemaLevel.String] gives). The empty string is [SchemaObject].
func ParseSchemaLevel(s string) (SchemaLevel, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "open":
		return SchemaOpen, true
	case "toplevel", "top-level", "top":
		return SchemaTopLevel, true
	case "full":
		return SchemaFull, true
	case "", "object":
		return SchemaObject, true
	}
	return SchemaObject, false
}

// Minimal returns a copy of t as the extension lists it in tools/list
// (seed 004 section 3.1): the short description, the input schema
// simplified to level and the annotations reduced to
// [MinimalAnnotations]. Name, title, icons and _meta are kept (resolvable
// markers and policy hints survive), except the [MetaShortDescription] key. Below [SchemaFull] the output schema is
// dropped too (the tool_descriptions resource serves it). t is not
// modified; a nil t gives nil.
//
// The short description is the author's ([MetaShortDescription]) when
// given, else [ShortDescription] of the full description.
func Minimal(t *mcp.Tool, level SchemaLevel) *mcp.Tool {
	if t == nil {
		return nil
	}
	m := *t
	if t.Annotations != nil {
		m.Annotations = MinimalAnnotations(preflight.AnnotationsOf(t.Annotations))
	}
	m.Description = Short(t)
	if len(t.Meta) > 0 {
		m.Meta = maps.Clone(t.Meta)
		delete(m.Meta, MetaShortDescription)
		if len(m.Meta) == 0 {
			m.Meta = nil
		}
	}
	switch level {
	case SchemaFull:
	case SchemaTopLevel:
		m.InputSchema = topLevelSchema(t.InputSchema)
		m.OutputSchema = nil
	case SchemaOpen:
		m.InputSchema = OpenSchema()
		m.OutputSchema = nil
	default:
		m.InputSchema = map[string]any{"type": "object"}
		m.OutputSchema = nil
	}
	return &m
}

// MinimalAnnotations returns the annotations that say what a, read with
// the protocol's defaults (readOnlyHint false, destructiveHint true,
// idempotentHint false, openWorldHint true), says, with only the values
// that differ from those defaults: a read-only tool keeps readOnlyHint
// true alone (destructiveHint and idempotentHint mean nothing for it), a
// tool that writes without destroying keeps destructiveHint false
// explicitly, an idempotent one idempotentHint true, and a closed-world
// one openWorldHint false. The title, a display name the full definition
// still carries, goes. It returns nil when a is the defaults, and
// [preflight.AnnotationsOf] of the result always decides as a does: a
// client confirms, retries and bounds resolutions the same way.
func MinimalAnnotations(a preflight.Annotations) *mcp.ToolAnnotations {
	var m mcp.ToolAnnotations
	if a.ReadOnlyHint {
		m.ReadOnlyHint = true
	} else {
		if !a.DestructiveHint {
			m.DestructiveHint = new(bool)
		}
		m.IdempotentHint = a.IdempotentHint
	}
	if !a.OpenWorldHint {
		m.OpenWorldHint = new(bool)
	}
	if m == (mcp.ToolAnnotations{}) {
		return nil
	}
	return &m
}

// OpenSchema returns a new {"type":"object","additionalProperties":true}.
func OpenSchema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": true}
}

// Short returns the description [Minimal] lists for t: the author's
// [MetaShortDescription] when it is a non-blank string, else
// [ShortDescription] of t's description, title and name.
func Short(t *mcp.Tool) string {
	if t == nil {
		return ""
	}
	if s, ok := t.Meta[MetaShortDescription].(string); ok {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	return ShortDescription(t.Description, title, t.Name)
}

// ShortDescription derives a short description that still says what a
// tool does. It takes the first sentence of description (a sentence ends
// at '.', '!' or '?' followed by a space, at a CJK full stop, at a blank
// line, or at a line that introduces a list), collapses white space, strips
// leading markdown heading marks and a trailing colon, and, when it is
// longer than [ShortDescriptionLimit] runes, cuts it at the last clause
// boundary (", ", "; ", " - ", " (") in the second half of the limit, else
// at the last space, and appends "…". It is never empty: with a blank
// description it falls back to title, then to a phrase made from name
// ("manage_files" gives "Manage files"), then to "Tool".
func ShortDescription(description, title, name string) string {
	if s := firstSentence(description); s != "" {
		// A description that opens with a question ("Not sure what to
		// eat?") says what the tool does in the sentence after it.
		if strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") {
			if rest, ok := strings.CutPrefix(collapse(description), s); ok {
				if next := firstSentence(rest); next != "" {
					s = next
				}
			}
		}
		return clip(s, ShortDescriptionLimit)
	}
	if s := collapse(title); s != "" {
		return clip(s, ShortDescriptionLimit)
	}
	if s := phrase(name); s != "" {
		return clip(s, ShortDescriptionLimit)
	}
	return "Tool"
}

// abbreviations end in a period without ending a sentence.
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true,
	"approx.": true, "incl.": true, "no.": true, "mr.": true, "mrs.": true,
	"dr.": true, "st.": true, "e.g.,": true, "i.e.,": true,
}

func firstSentence(d string) string {
	d = strings.ReplaceAll(d, "\r\n", "\n")
	lines := strings.Split(d, "\n")
	var b strings.Builder
	started := false
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if !started {
			line = strings.TrimSpace(strings.TrimLeft(line, "#"))
			if line == "" {
				continue
			}
			started = true
		} else if line == "" || isListItem(line) {
			break // a blank line or a list ends the first paragraph
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(line)
		if end := sentenceEnd(b.String()); end >= 0 {
			return finish(b.String()[:end])
		}
		if strings.HasSuffix(line, ":") && i+1 < len(lines) {
			break // "... as follows:" introduces what comes next
		}
	}
	return finish(b.String())
}

func isListItem(line string) bool {
	if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") || strings.HasPrefix(line, "• ") {
		return true
	}
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	return i > 0 && i < len(line)-1 && (line[i] == '.' || line[i] == ')') && line[i+1] == ' '
}

// sentenceEnd returns the byte index just past the end of the first
// sentence of s, or -1 if s holds no complete sentence.
func sentenceEnd(s string) int {
	for i, r := range s {
		switch r {
		case '。', '！', '？':
			return i + utf8.RuneLen(r)
		case '.', '!', '?':
			next := i + 1
			if next < len(s) && s[next] != ' ' {
				continue // "v1.2", "a.b", "?!"
			}
			if r == '.' {
				start := strings.LastIndexByte(s[:i], ' ') + 1
				word := strings.ToLower(s[start:next])
				if abbreviations[word] {
					continue
				}
			}
			if next >= len(s) {
				return -1 // the line may continue on the next one; finish trims it
			}
			return next
		}
	}
	return -1
}

func finish(s string) string {
	s = collapse(s)
	s = strings.TrimRight(s, ":;, ")
	return strings.TrimSpace(s)
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)
	head := string(runes[:limit-1]) // room for the ellipsis
	cut := -1
	for _, sep := range []string{", ", "; ", " - ", " – ", " — ", " (", "，", "、"} {
		if i := strings.LastIndex(head, sep); i > cut {
			cut = i
		}
	}
	if cut < 0 || utf8.RuneCountInString(head[:cut]) < limit/2 {
		cut = strings.LastIndexByte(head, ' ')
		if cut < 0 || utf8.RuneCountInString(head[:cut]) < limit/2 {
			cut = len(head) // no boundary: cut in the word (CJK has none)
		}
	}
	return strings.TrimRight(head[:cut], " ,;:-–—(，、") + "…"
}

// phrase turns a tool name into words: "manage_files" gives "Manage
// files", "getUserInfo" "Get user info", "github__list_issues" "Github list
// issues".
func phrase(name string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	if len(words) == 0 {
		return ""
	}
	s := strings.Join(words, " ")
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// topLevelSchema keeps the top-level property names and types of schema.
func topLevelSchema(schema any) map[string]any {
	out := OpenSchema()
	var m map[string]any
	if b, err := json.Marshal(schema); err != nil || json.Unmarshal(b, &m) != nil {
		return out
	}
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		return out
	}
	kept := make(map[string]any, len(props))
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if typ, ok := pm["type"]; ok {
			kept[name] = map[string]any{"type": typ}
		} else {
			kept[name] = map[string]any{}
		}
	}
	out["properties"] = kept
	return out
}

// Details are what an author adds to a tool's full definition beyond the
// tool itself (seed 004 section 4.4). Every field is optional. As JSON it
// is also the format of one file of a [Dir].
type Details struct {
	// Name, when set, must be the tool's name (a file's name says which
	// tool it describes; a name inside that disagrees is an error).
	Name string `json:"name,omitempty"`
	// Description replaces the tool's description in the full definition
	// (for a longer text than the registered one). Empty keeps the tool's.
	Description string `json:"description,omitempty"`
	// InputSchema replaces the tool's input schema in the full definition.
	// It is documentation only: arguments are validated against the
	// schema the tool was registered with. Nil keeps the tool's.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Examples are usage examples, in the seed's shape.
	Examples []Example `json:"examples,omitempty"`
	// UsageGuidance are usage notes: any JSON value, an object in the
	// seed's example.
	UsageGuidance any `json:"usage_guidance,omitempty"`
	// ErrorGuidance documents the tool's errors: any JSON value, an object
	// in the seed's example.
	ErrorGuidance any `json:"error_guidance,omitempty"`
}

// Example is one usage example of a tool.
type Example struct {
	Description string         `json:"description,omitempty"`
	Input       map[string]any `json:"input"`
	// Output optionally shows what the call returns.
	Output any `json:"output,omitempty"`
}

// Full returns t's full definition as the tool_descriptions resource
// serves it (seed 004 section 4.4): name, description, inputSchema, and,
// when given, outputSchema, title, annotations, examples, usage_guidance
// and error_guidance. extra may be nil. Schemas are returned as decoded
// JSON (map[string]any), so the map marshals the same wherever it came
// from.
func Full(t *mcp.Tool, extra *Details) map[string]any {
	if t == nil {
		return nil
	}
	if extra == nil {
		extra = &Details{}
	}
	e := map[string]any{"name": t.Name}
	desc := t.Description
	if extra.Description != "" {
		desc = extra.Description
	}
	if desc == "" {
		desc = Short(t)
	}
	e["description"] = desc
	if t.Title != "" {
		e["title"] = t.Title
	}
	var in any
	if len(extra.InputSchema) > 0 {
		in = decode(extra.InputSchema)
	}
	if in == nil && t.InputSchema != nil {
		in = decode(t.InputSchema)
	}
	if in == nil {
		in = map[string]any{"type": "object"}
	}
	e["inputSchema"] = in
	if t.OutputSchema != nil {
		if out := decode(t.OutputSchema); out != nil {
			e["outputSchema"] = out
		}
	}
	if t.Annotations != nil {
		if a := decode(t.Annotations); a != nil {
			if am, ok := a.(map[string]any); !ok || len(am) > 0 {
				e["annotations"] = a
			}
		}
	}
	if len(extra.Examples) > 0 {
		e["examples"] = extra.Examples
	}
	if extra.UsageGuidance != nil {
		e["usage_guidance"] = extra.UsageGuidance
	}
	if extra.ErrorGuidance != nil {
		e["error_guidance"] = extra.ErrorGuidance
	}
	return e
}

// decode turns a JSON-marshalable value (a *jsonschema.Schema, a
// json.RawMessage, a map) into its decoded form; nil if it does not
// marshal.
func decode(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
