package redact

//lint:file-ignore SA1019 a result may still hold sampling's content blocks (deprecated by protocol 2026-07-28, SEP-2577), whose text is read and redacted like any other.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nyaruka/phonenumbers"
)

// doc is one text the detectors read. Structured content is read as one
// text where every key and value sits on its own line after its key (so
// that rules looking for "password: ..." see the name), and pieces are the
// spans of that text that are strings of the result.
type doc struct {
	text   string
	pieces []span // nil: the whole text is one string
}

// lines identifies a rendered doc by its lines in any order: a JSON text
// that mirrors the structured content renders the same lines in its own
// order of keys, and the detectors, which read line by line, find the
// same in both; such a text is scanned once.
func (d doc) lines() uint64 {
	var hs []uint64
	for rest := d.text; rest != ""; {
		line, after, _ := strings.Cut(rest, "\n")
		hs = append(hs, maphash.String(lineSeed, line))
		rest = after
	}
	slices.Sort(hs)
	var h maphash.Hash
	h.SetSeed(lineSeed)
	var b [8]byte
	for _, x := range hs {
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	return h.Sum64()
}

// lineSeed seeds the line hashes; any seed does, one per process.
var lineSeed = maphash.MakeSeed()

type span struct{ start, end int }

// add records what a detector found at [s, e): the string, or the parts
// of the strings it covers.
func (d doc) add(values map[string]string, kind string, s, e int) {
	if d.pieces == nil {
		addValue(values, d.text[s:e], kind)
		return
	}
	i := sort.Search(len(d.pieces), func(i int) bool { return d.pieces[i].end > s })
	for ; i < len(d.pieces) && d.pieces[i].start < e; i++ {
		p := d.pieces[i]
		addValue(values, d.text[max(s, p.start):min(e, p.end)], kind)
	}
}

// collect returns the texts of res to scan, their size, and how many
// binary blocks it holds.
func collect(res *mcp.CallToolResult) (docs []doc, size, unscanned int) {
	var c collector
	c.meta(res.Meta)
	c.content(res.Content)
	if res.StructuredContent != nil {
		c.structured(res.StructuredContent)
	}
	return c.docs, c.size, c.unscanned
}

type collector struct {
	docs      []doc
	size      int
	unscanned int
}

// text adds a string of the result. A JSON object or array is read as
// structured content is: the detectors see the strings it encodes, not
// their escaped forms (in which "\\njane@example.com" would look like the
// address "njane@example.com").
func (c *collector) text(s string) {
	if s == "" {
		return
	}
	c.size += len(s)
	if d, ok := renderJSON(s); ok {
		c.docs = append(c.docs, d)
		return
	}
	c.docs = append(c.docs, doc{text: s})
}

func (c *collector) content(blocks []mcp.Content) {
	for _, b := range blocks {
		c.extras(b)
		switch b := b.(type) {
		case *mcp.TextContent:
			c.text(b.Text)
		case *mcp.ImageContent, *mcp.AudioContent:
			c.unscanned++
		case *mcp.ResourceLink:
			c.text(b.URI)
			c.text(b.Name)
			c.text(b.Title)
			c.text(b.Description)
		case *mcp.EmbeddedResource:
			if r := b.Resource; r != nil {
				c.text(r.URI)
				c.text(r.Text)
				if len(r.Blob) > 0 {
					if textual(r.MIMEType, r.Blob) {
						c.text(string(r.Blob))
					} else {
						c.unscanned++
					}
				}
			}
		case *mcp.ToolUseContent:
			c.text(b.Name)
			c.structured(b.Input)
		case *mcp.ToolResultContent:
			c.content(b.Content)
			if b.StructuredContent != nil {
				c.structured(b.StructuredContent)
			}
		}
	}
}

func (c *collector) structured(v any) {
	g, err := generic(v)
	if err != nil {
		// What cannot be encoded cannot be sent either; read what the
		// error says, which is all a client could see.
		c.text(err.Error())
		return
	}
	c.size += c.render(g)
}

// render adds the rendering of a generic JSON value and returns its size.
func (c *collector) render(v any) int {
	var r renderer
	r.b.Grow(4 << 10)
	r.value("", v)
	c.docs = append(c.docs, doc{text: r.b.String(), pieces: r.pieces})
	return r.b.Len()
}

// renderer writes structured content as lines of `"key": "value"`.
type renderer struct {
	b      rbuf
	pieces []span
}

// rbuf is a byte buffer with the methods of strings.Builder that the
// renderers use.
type rbuf []byte

func (b *rbuf) WriteByte(c byte) error { *b = append(*b, c); return nil }
func (b *rbuf) WriteString(s string)   { *b = append(*b, s...) }
func (b *rbuf) WriteRune(r rune)       { *b = utf8.AppendRune(*b, r) }
func (b *rbuf) Len() int               { return len(*b) }
func (b *rbuf) String() string         { return string(*b) }
func (b *rbuf) Grow(n int)             { *b = slices.Grow(*b, n) }

func (r *renderer) piece(s string) {
	start := r.b.Len()
	r.b.WriteString(s)
	r.pieces = append(r.pieces, span{start, r.b.Len()})
}

func (r *renderer) value(key string, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.AppendSeq(make([]string, 0, len(v)), maps.Keys(v))
		slices.Sort(keys)
		for _, k := range keys {
			switch x := v[k].(type) {
			case map[string]any, []any:
				r.b.WriteByte('"')
				r.piece(k)
				r.b.WriteString("\"\n")
				r.value(k, x)
			default:
				r.b.WriteByte('"')
				r.piece(k)
				r.b.WriteString("\": ")
				r.leaf(x)
			}
		}
	case []any:
		for _, x := range v {
			switch x.(type) {
			case map[string]any, []any:
				r.value(key, x)
			default:
				r.leafKey(key)
				r.leaf(x)
			}
		}
	default:
		r.leaf(v)
	}
}

// leafKey starts the line of a leaf under key.
func (r *renderer) leafKey(key string) {
	if key != "" {
		r.b = strconv.AppendQuote(r.b, key)
		r.b.WriteString(": ")
	}
}

func (r *renderer) leaf(v any) {
	switch v := v.(type) {
	case string:
		r.b.WriteByte('"')
		r.piece(v)
		r.b.WriteByte('"')
	case nil:
		r.b.WriteString("null")
	case bool:
		r.b.WriteString(strconv.FormatBool(v))
	default:
		r.piece(numText(v))
	}
	r.b.WriteByte('\n')
}

// generic returns v as the values encoding/json decodes into an any
// (numbers as json.Number, so that they keep every digit).
func generic(v any) (any, error) {
	if isGeneric(v) {
		return v, nil
	}
	var data []byte
	if raw, ok := v.(json.RawMessage); ok {
		data = raw
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("structured content: %w", err)
	}
	return g, nil
}

func isGeneric(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, float64, json.Number:
		return true
	case map[string]any:
		for _, x := range v {
			if !isGeneric(x) {
				return false
			}
		}
		return true
	case []any:
		for _, x := range v {
			if !isGeneric(x) {
				return false
			}
		}
		return true
	}
	return false
}

// numText is a number as encoding/json writes it.
func numText(v any) string {
	switch v := v.(type) {
	case json.Number:
		return string(v)
	case float64:
		if a := math.Abs(v); a == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// textual reports whether a blob of this MIME type is text to scan.
func textual(mime string, b []byte) bool {
	m := strings.ToLower(strings.TrimSpace(mime))
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = strings.TrimSpace(m[:i])
	}
	switch {
	case strings.HasPrefix(m, "text/"), strings.HasSuffix(m, "+json"), strings.HasSuffix(m, "+xml"), strings.HasSuffix(m, "+yaml"),
		slices.Contains([]string{"application/json", "application/xml", "application/yaml", "application/x-yaml",
			"application/toml", "application/javascript", "application/x-ndjson", "application/x-www-form-urlencoded",
			"application/x-sh", "application/sql"}, m):
		return utf8.Valid(b)
	case m == "", m == "application/octet-stream":
		if !utf8.Valid(b) {
			return false
		}
		for _, c := range b {
			if c < ' ' && c != '\n' && c != '\r' && c != '\t' {
				return false
			}
		}
		return true
	}
	return false
}

// rewrite returns res with repl applied to every string that collect
// reads, or res itself when nothing changes.
func rewrite(res *mcp.CallToolResult, repl *valueReplacer) *mcp.CallToolResult {
	content, changed := rewriteContent(res.Content, repl)
	var sc any
	scChanged := false
	if res.StructuredContent != nil {
		sc, scChanged = rewriteStructured(res.StructuredContent, repl)
	}
	meta, metaChanged := rewriteMeta(res.Meta, repl)
	if !changed && !scChanged && !metaChanged {
		return res
	}
	out := *res
	out.Meta = meta
	if changed {
		out.Content = content
	}
	if scChanged {
		out.StructuredContent = sc
	}
	return &out
}

func rewriteContent(blocks []mcp.Content, repl *valueReplacer) ([]mcp.Content, bool) {
	var out []mcp.Content
	for i, b := range blocks {
		nb := rewriteBlock(b, repl)
		if e := rewriteExtras(cmp.Or(nb, b), repl); e != nil {
			nb = e
		}
		if nb == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(blocks)
		}
		out[i] = nb
	}
	if out == nil {
		return blocks, false
	}
	return out, true
}

// rewriteBlock returns a rewritten copy of b, nil when nothing changes.
func rewriteBlock(b mcp.Content, repl *valueReplacer) mcp.Content {
	r := func(s string, changed *bool) string {
		n := replaceText(s, repl)
		*changed = *changed || n != s
		return n
	}
	changed := false
	switch b := b.(type) {
	case *mcp.TextContent:
		c := *b
		if c.Text = r(b.Text, &changed); changed {
			return &c
		}
	case *mcp.ResourceLink:
		c := *b
		c.URI, c.Name, c.Title, c.Description = r(b.URI, &changed), r(b.Name, &changed), r(b.Title, &changed), r(b.Description, &changed)
		if changed {
			return &c
		}
	case *mcp.EmbeddedResource:
		if b.Resource == nil {
			return nil
		}
		rc := *b.Resource
		rc.URI, rc.Text = r(rc.URI, &changed), r(rc.Text, &changed)
		if len(rc.Blob) > 0 && textual(rc.MIMEType, rc.Blob) {
			if n := replaceText(string(rc.Blob), repl); n != string(rc.Blob) {
				rc.Blob, changed = []byte(n), true
			}
		}
		if changed {
			c := *b
			c.Resource = &rc
			return &c
		}
	case *mcp.ToolUseContent:
		c := *b
		c.Name = r(b.Name, &changed)
		if in, ch := rewriteStructured(b.Input, repl); ch {
			c.Input, _ = in.(map[string]any)
			changed = true
		}
		if changed {
			return &c
		}
	case *mcp.ToolResultContent:
		c := *b
		c.Content, changed = rewriteContent(b.Content, repl)
		if b.StructuredContent != nil {
			if sc, ch := rewriteStructured(b.StructuredContent, repl); ch {
				c.StructuredContent, changed = sc, true
			}
		}
		if changed {
			return &c
		}
	}
	return nil
}

// replaceText applies repl to a string of the result. In a JSON text it
// replaces within each string and number apart, and a number that changes
// becomes a string, so that the text stays JSON; a text with anything
// but JSON outside its strings is replaced as a whole.
func replaceText(s string, repl *valueReplacer) string {
	found := repl.find(s)
	if len(found) == 0 {
		return s
	}
	whole := repl.apply(s, found)
	if i := strings.IndexAny(s, "{["); i < 0 || strings.TrimLeft(s[:i], " \t\r\n") != "" {
		return whole
	}
	// Only tokens that hold the start of something found are replaced in;
	// the others are copied.
	touched := func(start, end int) bool {
		for len(found) > 0 && found[0].end <= start {
			found = found[1:]
		}
		return len(found) > 0 && found[0].start < end
	}
	b := make([]byte, 0, len(whole)+16)
	changed := false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return whole // not JSON after all
			}
			inner := s[i+1 : j]
			if touched(i+1, j) {
				n := repl.Replace(inner)
				changed = changed || n != inner
				b = append(append(append(b, '"'), n...), '"')
			} else {
				b = append(b, s[i:j+1]...)
			}
			i = j + 1
		case c == '-' || isDigit(c):
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || strings.IndexByte(".eE+-", s[j]) >= 0) {
				j++
			}
			num := s[i:j]
			if !touched(i, j) {
				b = append(b, num...)
			} else if n := repl.Replace(num); n != num {
				changed = true
				b = strconv.AppendQuote(b, n)
			} else {
				b = append(b, num...)
			}
			i = j
		case strings.IndexByte("{}[],: \t\r\n", c) >= 0:
			j := i + 1
			for j < len(s) && strings.IndexByte("{}[],: \t\r\n", s[j]) >= 0 {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
		default:
			w := ""
			for _, lit := range []string{"true", "false", "null"} {
				if strings.HasPrefix(s[i:], lit) {
					w = lit
				}
			}
			if w == "" {
				return whole // not JSON after all
			}
			b = append(b, w...)
			i += len(w)
		}
	}
	if !changed {
		return whole // what changed spans tokens: not JSON as it seemed
	}
	return string(b)
}

// rewriteStructured applies repl to the strings, keys and numbers of v,
// returning the generic form of v when something changed. A number that
// changes becomes a string.
func rewriteStructured(v any, repl *valueReplacer) (any, bool) {
	g, err := generic(v)
	if err != nil {
		return v, false
	}
	return rewriteValue(g, repl)
}

func rewriteValue(v any, repl *valueReplacer) (any, bool) {
	switch v := v.(type) {
	case string:
		n := repl.Replace(v)
		return n, n != v
	case nil, bool:
		return v, false
	case map[string]any:
		changed := false
		vals := make(map[string]any, len(v))
		for k, x := range v {
			nx, ch := rewriteValue(x, repl)
			changed = changed || ch || repl.Replace(k) != k
			vals[k] = nx
		}
		if !changed {
			return v, false
		}
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			nk := repl.Replace(k)
			if nk != k {
				// Two keys redacted alike keep both values.
				for i, base := 2, nk; ; i++ {
					if _, taken := v[nk]; !taken {
						if _, taken := out[nk]; !taken {
							break
						}
					}
					nk = fmt.Sprintf("%s (%d)", base, i)
				}
			}
			out[nk] = vals[k]
		}
		return out, true
	case []any:
		var out []any
		for i, x := range v {
			if nx, ch := rewriteValue(x, repl); ch {
				if out == nil {
					out = slices.Clone(v)
				}
				out[i] = nx
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	t := numText(v)
	if n := repl.Replace(t); n != t {
		return n, true
	}
	return v, false
}

// jsonForms returns v and the forms it takes written inside a JSON string
// by common encoders (HTML-safe or not, ASCII-only, slashes escaped), or,
// when v was read inside one, the string it stands for.
func jsonForms(v string) []string {
	forms := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		plain := strings.TrimSuffix(b.String(), "\n")
		plain = plain[1 : len(plain)-1]
		add(plain)
		add(strings.ReplaceAll(plain, "/", `\/`))
		add(asciiJSON(plain))
	}
	if data, err := json.Marshal(v); err == nil {
		add(string(data[1 : len(data)-1]))
	}
	if strings.Contains(v, `\`) {
		var u string
		if json.Unmarshal([]byte(`"`+v+`"`), &u) == nil {
			add(u)
		}
	}
	return forms
}

// asciiJSON escapes the non-ASCII runes of an encoded JSON string as
// \uXXXX, as Python's json module writes them.
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// validRegion reports whether libphonenumber knows the region.
func validRegion(region string) bool {
	_, ok := phonenumbers.GetSupportedRegions()[region]
	return ok
}

// renderJSON renders a JSON object or array as renderer.value renders its
// decoded value, except that keys stay in the document's order, reading
// the text once without building the value; false when s is not one JSON
// object or array.
func renderJSON(s string) (doc, bool) {
	p := jsonReader{s: s}
	p.space()
	if p.i == len(s) || s[p.i] != '{' && s[p.i] != '[' {
		return doc{}, false
	}
	p.r.b.Grow(len(s) + len(s)/8)
	p.r.pieces = make([]span, 0, strings.Count(s, `"`)/2+8)
	if !p.value(nil, 0) {
		return doc{}, false
	}
	p.space()
	if p.i != len(s) {
		return doc{}, false
	}
	return doc{text: p.r.b.String(), pieces: p.r.pieces}, true
}

// maxDepth bounds the nesting renderJSON follows; deeper text is read as
// plain text.
const maxDepth = 1000

type jsonReader struct {
	s string
	i int
	r renderer
}

func (p *jsonReader) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads a value under key (the bytes of the rendering that hold
// the key, which later writes never change).
func (p *jsonReader) value(key []byte, depth int) bool {
	if depth > maxDepth || p.i >= len(p.s) {
		return false
	}
	switch p.s[p.i] {
	case '{':
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return true
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return false
			}
			start := p.r.b.Len()
			p.r.b.WriteByte('"')
			if !p.str() {
				return false
			}
			k := p.r.b[start+1:]
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			if c := p.s[p.i]; c == '{' || c == '[' {
				p.r.b.WriteString("\"\n")
				if !p.value(k, depth+1) {
					return false
				}
			} else {
				p.r.b.WriteString("\": ")
				if !p.leaf() {
					return false
				}
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			if p.s[p.i] == '}' {
				p.i++
				return true
			}
			if p.s[p.i] != ',' {
				return false
			}
			p.i++
		}
	case '[':
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return true
		}
		for {
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			if c := p.s[p.i]; c == '{' || c == '[' {
				if !p.value(key, depth+1) {
					return false
				}
			} else {
				if len(key) > 0 {
					p.r.b = strconv.AppendQuote(p.r.b, string(key))
					p.r.b.WriteString(": ")
				}
				if !p.leaf() {
					return false
				}
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			if p.s[p.i] == ']' {
				p.i++
				return true
			}
			if p.s[p.i] != ',' {
				return false
			}
			p.i++
		}
	}
	return false
}

// leaf reads a string, number, true, false or null and writes its line.
func (p *jsonReader) leaf() bool {
	s := p.s
	switch {
	case s[p.i] == '"':
		p.r.b.WriteByte('"')
		if !p.str() {
			return false
		}
		p.r.b.WriteString("\"\n")
		return true
	case strings.HasPrefix(s[p.i:], "true"), strings.HasPrefix(s[p.i:], "null"):
		p.r.b.WriteString(s[p.i : p.i+4])
		p.i += 4
	case strings.HasPrefix(s[p.i:], "false"):
		p.r.b.WriteString("false")
		p.i += 5
	default:
		start := p.i
		if p.i < len(s) && s[p.i] == '-' {
			p.i++
		}
		digits := func() int {
			n := 0
			for p.i < len(s) && isDigit(s[p.i]) {
				p.i++
				n++
			}
			return n
		}
		if p.i < len(s) && s[p.i] == '0' {
			p.i++
		} else if digits() == 0 {
			return false
		}
		if p.i < len(s) && s[p.i] == '.' {
			p.i++
			if digits() == 0 {
				return false
			}
		}
		if p.i < len(s) && (s[p.i] == 'e' || s[p.i] == 'E') {
			p.i++
			if p.i < len(s) && (s[p.i] == '+' || s[p.i] == '-') {
				p.i++
			}
			if digits() == 0 {
				return false
			}
		}
		p.r.piece(s[start:p.i])
	}
	p.r.b.WriteByte('\n')
	return true
}

// str reads a JSON string at p.i and writes what it encodes as a piece.
func (p *jsonReader) str() bool {
	s := p.s
	p.i++ // the opening quote
	start := p.r.b.Len()
	for p.i < len(s) {
		j := p.i
		for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= ' ' {
			j++
		}
		p.r.b.WriteString(s[p.i:j])
		p.i = j
		if j == len(s) || s[j] < ' ' {
			return false
		}
		if s[j] == '"' {
			p.i++
			if !utf8.Valid(p.r.b[start:]) {
				return false // encoding/json would change it; read it as text
			}
			p.r.pieces = append(p.r.pieces, span{start, p.r.b.Len()})
			return true
		}
		// An escape.
		if j+1 >= len(s) {
			return false
		}
		switch c := s[j+1]; c {
		case '"', '\\', '/':
			p.r.b.WriteByte(c)
		case 'b':
			p.r.b.WriteByte('\b')
		case 'f':
			p.r.b.WriteByte('\f')
		case 'n':
			p.r.b.WriteByte('\n')
		case 'r':
			p.r.b.WriteByte('\r')
		case 't':
			p.r.b.WriteByte('\t')
		case 'u':
			r, n := hex4(s, j+2)
			if n < 0 {
				return false
			}
			p.i = j + 6
			if utf16.IsSurrogate(r) {
				if r2, n2 := hex4(s, p.i+2); n2 >= 0 && strings.HasPrefix(s[p.i:], `\u`) {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						p.r.b.WriteRune(d)
						p.i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			p.r.b.WriteRune(r)
			continue
		default:
			return false
		}
		p.i = j + 2
	}
	return false
}

// hex4 reads four hex digits at i; n is -1 when there are none.
func hex4(s string, i int) (rune, int) {
	if i+4 > len(s) {
		return 0, -1
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}
