package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/jsonc"
	"go.yaml.in/yaml/v4"
)

// A file, YAML or JSON, is first read into a tree of nodes that keep their
// positions; decoding, interpolation and validation work on the tree.

// Limits on what one file may expand to.
const (
	maxDepth = 64     // nesting of mappings and sequences
	maxNodes = 20_000 // values, after YAML aliases are expanded
)

// pos is where a value starts: a line and column (1-based), or for JSON
// the offset plus one until an error needs the line and column (counting
// the columns of every value of a one-line file would be quadratic).
type pos struct{ line, col, off int }

type kind uint8

const (
	nullNode kind = iota
	scalarNode
	mapNode
	seqNode
)

func (k kind) String() string {
	return [...]string{"null", "a scalar", "a mapping", "a sequence"}[k]
}

type node struct {
	kind  kind
	tag   string // scalars: str, int, float, bool or timestamp
	text  string // scalars: the text as written (strings unescaped)
	pairs []pair // mappings, in file order
	items []*node
	pos   pos
	subst bool // text was produced by ${...} interpolation
}

type pair struct{ key, val *node }

// get returns the value of key in a mapping, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	for _, p := range n.pairs {
		if p.key.text == key {
			return p.val
		}
	}
	return nil
}

// describe names what n is, for "expected X, found Y" messages.
func (n *node) describe() string {
	if n.kind != scalarNode {
		return n.kind.String()
	}
	switch n.tag {
	case "str":
		return "the string " + quote(n.text)
	case "bool":
		return n.text
	case "timestamp":
		return "the date " + printable(n.text)
	default:
		return "the number " + printable(n.text)
	}
}

// isJSON reports whether a file is read as JSON: a name ending in .yaml
// or .yml is YAML; otherwise a file whose first character (after a byte
// order mark, white space and comments) is { or [ is JSON.
func isJSON(name string, data []byte) bool {
	if lower := strings.ToLower(name); strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") {
		return false
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	for {
		data = bytes.TrimLeft(data, " \t\r\n")
		switch {
		case bytes.HasPrefix(data, []byte("//")):
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				return false
			}
			data = data[i:]
		case bytes.HasPrefix(data, []byte("/*")):
			i := bytes.Index(data, []byte("*/"))
			if i < 0 {
				return false
			}
			data = data[i+2:]
		default:
			return len(data) > 0 && (data[0] == '{' || data[0] == '[')
		}
	}
}

// readYAML reads one YAML document.
func readYAML(data []byte, errs *errList) *node {
	var doc yaml.Node
	l, err := yaml.NewLoader(bytes.NewReader(data))
	if err == nil {
		err = l.Load(&doc)
		if err == io.EOF {
			errs.add(pos{}, "", "the file is empty (expected a mapping with servers)")
			return nil
		}
	}
	if err == nil {
		var next yaml.Node
		if err = l.Load(&next); err == nil {
			errs.add(pos{line: next.Line, col: next.Column}, "", "YAML: a second document: a config file holds one")
			return nil
		} else if err == io.EOF {
			err = nil
		}
	}
	if err != nil {
		var le *yaml.LoadError
		if errors.As(err, &le) {
			msg := strings.TrimPrefix(le.Message, "yaml: ")
			if le.ContextMsg != "" {
				msg += " (" + le.ContextMsg + ")"
			}
			errs.add(pos{line: le.Mark.Line, col: le.Mark.Column}, "", "YAML: %s", msg)
		} else {
			errs.add(pos{}, "", "YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	c := yamlConverter{errs: errs}
	n := c.convert(&doc, 0)
	if c.failed {
		return nil
	}
	return n
}

type yamlConverter struct {
	errs   *errList
	nodes  int
	failed bool
}

func (c *yamlConverter) fail(n *yaml.Node, format string, args ...any) *node {
	if !c.failed {
		c.errs.add(pos{line: n.Line, col: n.Column}, "", format, args...)
	}
	c.failed = true
	return nil
}

func (c *yamlConverter) convert(y *yaml.Node, depth int) *node {
	if c.failed {
		return nil
	}
	c.nodes++
	if c.nodes > maxNodes {
		return c.fail(y, "YAML: more than %d values (with aliases expanded)", maxNodes)
	}
	if depth > maxDepth {
		return c.fail(y, "YAML: nested more than %d levels deep", maxDepth)
	}
	at := pos{line: y.Line, col: y.Column}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: nullNode, pos: at}
		}
		return c.convert(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			return c.fail(y, "YAML: unknown alias")
		}
		return c.convert(y.Alias, depth+1)
	case yaml.SequenceNode:
		n := &node{kind: seqNode, pos: at, items: make([]*node, 0, len(y.Content))}
		for _, item := range y.Content {
			n.items = append(n.items, c.convert(item, depth+1))
		}
		return n
	case yaml.MappingNode:
		n := &node{kind: mapNode, pos: at}
		var merged []pair
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merged = append(merged, c.merge(v, depth+1)...)
				continue
			}
			key := c.convert(k, depth+1)
			if c.failed {
				return nil
			}
			if key.kind != scalarNode {
				return c.fail(k, "YAML: a key must be a string, not %s", key.kind)
			}
			n.pairs = append(n.pairs, pair{key, c.convert(v, depth+1)})
		}
		// Merged keys (<<) come after the mapping's own, which win.
		for _, p := range merged {
			if n.get(p.key.text) == nil {
				n.pairs = append(n.pairs, p)
			}
		}
		return n
	case yaml.ScalarNode:
		tag := strings.TrimPrefix(y.ShortTag(), "!!")
		switch tag {
		case "null":
			return &node{kind: nullNode, pos: at}
		case "str", "int", "float", "bool", "timestamp":
			return &node{kind: scalarNode, tag: tag, text: y.Value, pos: at}
		default:
			return c.fail(y, "YAML: unsupported tag %s", quote(y.Tag))
		}
	}
	return c.fail(y, "YAML: unexpected node")
}

// merge returns the pairs a merge key (<<) brings: those of a mapping, or
// of a sequence of mappings where earlier ones win.
func (c *yamlConverter) merge(v *yaml.Node, depth int) []pair {
	m := c.convert(v, depth)
	if c.failed {
		return nil
	}
	switch m.kind {
	case mapNode:
		return m.pairs
	case seqNode:
		var out []pair
		seen := map[string]bool{}
		for _, item := range m.items {
			if item.kind != mapNode {
				c.fail(v, "YAML: a merge key (<<) takes a mapping or a sequence of mappings")
				return nil
			}
			for _, p := range item.pairs {
				if !seen[p.key.text] {
					seen[p.key.text] = true
					out = append(out, p)
				}
			}
		}
		return out
	}
	c.fail(v, "YAML: a merge key (<<) takes a mapping or a sequence of mappings")
	return nil
}

// readJSON reads JSON as VS Code writes it: comments (// and /* */) and
// trailing commas are allowed.
func readJSON(data []byte, errs *errList) *node {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	lines := lineStarts(data)
	clean, bad := jsonc.Strip(data)
	if bad >= 0 {
		errs.add(lines.pos(data, bad), "", "JSON: unterminated comment")
		return nil
	}
	errs.where = func(off int) pos { return lines.pos(data, off) }
	p := &jsonReader{dec: json.NewDecoder(bytes.NewReader(clean)), data: data}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err == nil {
		if _, err = p.dec.Token(); err == io.EOF {
			return n
		} else if err == nil {
			err = &jsonError{p.offset(), "data after the top-level value"}
		}
	}
	var se *json.SyntaxError
	var je *jsonError
	switch {
	case errors.As(err, &je):
		errs.add(lines.pos(data, je.off), "", "JSON: %s", je.msg)
	case errors.As(err, &se):
		errs.add(lines.pos(data, int(se.Offset)), "", "JSON: %s", se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		errs.add(lines.pos(data, len(data)), "", "JSON: unexpected end of file")
	default:
		errs.add(pos{}, "", "JSON: %s", err.Error())
	}
	return nil
}

type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return e.msg }

type jsonReader struct {
	dec  *json.Decoder
	data []byte
}

// offset is where the next token starts.
func (p *jsonReader) offset() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) && strings.IndexByte(" \t\r\n:,", p.data[off]) >= 0 {
		off++
	}
	return off
}

func (p *jsonReader) value(depth int) (*node, error) {
	off := p.offset()
	if depth > maxDepth {
		return nil, &jsonError{off, "nested more than 64 levels deep"}
	}
	at := pos{off: off + 1}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: mapNode, pos: at}
			for p.dec.More() {
				koff := p.offset()
				k, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := k.(string)
				if !ok {
					return nil, &jsonError{koff, "a key must be a string"}
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.pairs = append(n.pairs, pair{&node{kind: scalarNode, tag: "str", text: key, pos: pos{off: koff + 1}}, v})
			}
			_, err := p.dec.Token() // }
			return n, err
		case '[':
			n := &node{kind: seqNode, pos: at}
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			_, err := p.dec.Token() // ]
			return n, err
		}
	case string:
		return &node{kind: scalarNode, tag: "str", text: t, pos: at}, nil
	case json.Number:
		tag := "int"
		if strings.ContainsAny(string(t), ".eE") {
			tag = "float"
		}
		return &node{kind: scalarNode, tag: tag, text: string(t), pos: at}, nil
	case bool:
		text := "false"
		if t {
			text = "true"
		}
		return &node{kind: scalarNode, tag: "bool", text: text, pos: at}, nil
	case nil:
		return &node{kind: nullNode, pos: at}, nil
	}
	return nil, &jsonError{off, "unexpected token"}
}

// lineTable holds the offset at which each line starts.
type lineTable []int

func lineStarts(data []byte) lineTable {
	t := lineTable{0}
	for i, c := range data {
		if c == '\n' {
			t = append(t, i+1)
		}
	}
	return t
}

// pos returns the 1-based line and column (in characters) of off.
func (t lineTable) pos(data []byte, off int) pos {
	off = min(max(off, 0), len(data))
	line := sort.Search(len(t), func(i int) bool { return t[i] > off }) - 1
	return pos{line: line + 1, col: utf8.RuneCount(data[t[line]:off]) + 1}
}
