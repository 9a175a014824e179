// Package entry reads every JSON-RPC message a client sends to the gateway,
// once, with one strict parser. It refuses any message that two JSON parsers
// could read differently (repeated or case-folded keys, escaped spellings of
// the same key, lone surrogates, invalid UTF-8, numbers that overflow a
// float64, excessive nesting, a __proto__ key), so what the gateway judges is
// what the upstream server executes, and it builds the forwarded request
// only from what was judged.
package entry

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

const (
	// MaxDepth is the deepest nesting of objects and arrays Parse accepts;
	// the message's own object is depth 1.
	MaxDepth = 100
	// MaxBytes is the longest message Parse accepts, the same as the Go SDK's
	// mcp.DefaultMaxRequestBodyBytes.
	MaxBytes = 4 << 20
)

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
)

// Message is one JSON-RPC message a client sent, read once and proven
// unambiguous: every JSON parser a peer may use reads it the same way.
//
// The byte fields alias the body given to Parse, which must not be modified
// while the Message is in use.
type Message struct {
	Body   []byte          // the message as received
	ID     json.RawMessage // the id's exact bytes; nil for a notification (no id member)
	Method string          // "" for a response
	Params json.RawMessage // exact bytes of params; nil when absent

	Result, Error json.RawMessage // a response's members; nil when absent

	// Members of params found in place, whenever params is an object.
	Name            string          // params.name when it is a string
	HasName         bool            // params.name is present and a string
	URI             string          // params.uri when it is a string
	HasURI          bool            // params.uri is present and a string
	Arguments       json.RawMessage // params.arguments exact bytes; nil when absent or JSON null
	Meta            json.RawMessage // params._meta exact bytes; nil when absent
	InputResponses  json.RawMessage // params.inputResponses exact bytes; nil when absent
	RequestState    string          // params.requestState when it is a string
	HasRequestState bool            // params.requestState is present and a string

	// KeysEscaped reports that some object key inside Arguments was written
	// with a backslash escape, so a forwarder re-encodes the arguments (see
	// CanonicalArguments) instead of sending the bytes.
	KeysEscaped bool

	args     map[string]any
	argsErr  error
	argsDone bool
}

// Error is a message refused by Parse: the JSON-RPC code to answer with, the
// member it concerns as a path ("params.arguments.action", "params._meta",
// "id"), and a message a person can act on.
type Error struct {
	Code    int64
	Member  string
	Message string
	ID      json.RawMessage // the request's id when it could be read unambiguously, else nil
}

func (e *Error) Error() string { return e.Message }

// Parse reads one client message and refuses, with an *Error, any message
// that is not valid JSON-RPC or that JSON parsers could read differently.
//
// Refusals answer -32700 for input that is not one JSON value, -32600 for a
// problem in the envelope (the top level, or params itself) and -32602 for a
// problem inside params. The returned Message aliases body.
func Parse(body []byte) (*Message, error) {
	if len(body) > MaxBytes {
		return nil, &Error{Code: codeInvalidRequest, Message: "message is larger than " + strconv.Itoa(MaxBytes) + " bytes"}
	}
	s := scanners.Get().(*scanner)
	m, err := s.parse(body)
	s.release()
	return m, err
}

// scanners holds scanners for reuse, with their buffers.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// release resets s and returns it to the pool.
func (s *scanner) release() {
	s.reset()
	scanners.Put(s)
}

// reset drops what s read, keeping its buffers unless they grew large.
func (s *scanner) reset() {
	keys, scratch, folds := s.keys[:0], s.scratch[:0], s.folds
	if cap(keys) > 1024 {
		keys = nil
	}
	if cap(scratch) > 16<<10 {
		scratch = nil
	}
	if len(folds) > 8 {
		folds = nil
	}
	for _, m := range folds {
		if len(m) > 0 {
			clear(m) // drop the client's keys
		}
	}
	s.data, s.pos, s.depth, s.err, s.problems = nil, 0, 0, nil, 0
	s.inArgs, s.keysEscaped, s.idBad = false, false, false
	s.keys, s.scratch, s.folds = keys, scratch, folds
	s.top, s.par = [nTop]member{}, [nParams]member{}
}

func (s *scanner) parse(body []byte) (*Message, error) {
	s.data = body
	s.ws()
	if s.pos >= len(body) {
		return nil, &Error{Code: codeParse, Message: "invalid JSON: empty message"}
	}
	first := body[s.pos]
	k := kindOther
	if first == '{' {
		k = kindTop
	}
	if e := s.value(k); e != nil {
		if k == kindTop && s.depth > MaxDepth {
			// The reading stopped inside a value nested too deep: the
			// client still gets the error under its id when the message
			// has exactly one.
			e.ID = shallowID(body)
		}
		return nil, e
	}
	s.ws()
	if s.pos < len(body) {
		return nil, &Error{Code: codeParse, Message: "invalid JSON: data after the message at byte " + strconv.Itoa(s.pos)}
	}
	switch {
	case first == '[':
		return nil, &Error{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported; send one message at a time"}
	case first != '{':
		return nil, &Error{Code: codeInvalidRequest, Message: "a JSON-RPC message must be a JSON object"}
	case s.err != nil:
		s.err.ID = s.cleanID()
		return nil, s.err
	}
	return s.envelope()
}

// Args decodes m.Arguments into a map once, with encoding/json semantics
// (numbers as float64); nil Arguments give an empty map. The result is cached
// and shared: callers must not modify it, and the first call must not race
// with another.
func (m *Message) Args() (map[string]any, error) {
	if m.argsDone {
		return m.args, m.argsErr
	}
	m.argsDone = true
	a := bytes.TrimLeft(m.Arguments, " \t\r\n")
	switch {
	case m.Arguments == nil:
		m.args = map[string]any{}
	case len(a) == 0 || a[0] != '{':
		m.argsErr = m.argsError()
	default:
		if err := json.Unmarshal(m.Arguments, &m.args); err != nil {
			m.args, m.argsErr = nil, m.argsError()
		}
	}
	return m.args, m.argsErr
}

func (m *Message) argsError() *Error {
	return &Error{Code: codeInvalidParams, Member: "params.arguments", Message: "params.arguments must be a JSON object", ID: m.ID}
}

// CanonicalArguments returns the arguments to forward: m.Arguments as is when
// !KeysEscaped, else the same bytes with every escaped key decoded and written
// with only the escapes JSON requires. Key order, values and spacing are kept.
func (m *Message) CanonicalArguments() (json.RawMessage, error) {
	if !m.KeysEscaped || m.Arguments == nil {
		return m.Arguments, nil
	}
	a := m.Arguments
	out := make([]byte, 0, len(a))
	var key []byte
	for i := 0; i < len(a); {
		c := a[i]
		if c != '"' {
			out = append(out, c)
			i++
			continue
		}
		j, esc := i+1, false
		for j < len(a) && a[j] != '"' {
			if a[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		if j >= len(a) {
			return nil, m.argsError()
		}
		end := j + 1
		k := end
		for k < len(a) && isSpace(a[k]) {
			k++
		}
		if esc && k < len(a) && a[k] == ':' {
			var ok bool
			if key, ok = appendUnquoted(key[:0], a[i+1:j]); !ok {
				return nil, m.argsError()
			}
			out = wire.AppendString(out, string(key))
		} else {
			out = append(out, a[i:end]...)
		}
		i = end
	}
	return out, nil
}

// The scanner.

type kind uint8

const (
	kindOther  kind = iota
	kindTop         // the message's object
	kindParams      // the object under the top-level "params"
)

// Members recorded at the top level and in params.
const (
	tJSONRPC = iota
	tID
	tMethod
	tParams
	tResult
	tError
	nTop
)

const (
	pName = iota
	pURI
	pArguments
	pMeta
	pInputResponses
	pRequestState
	nParams
)

var (
	topNames   = [nTop]string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramNames = [nParams]string{"name", "uri", "arguments", "_meta", "inputResponses", "requestState"}
)

func topIndex(k []byte) int {
	switch string(k) {
	case "jsonrpc":
		return tJSONRPC
	case "id":
		return tID
	case "method":
		return tMethod
	case "params":
		return tParams
	case "result":
		return tResult
	case "error":
		return tError
	}
	return -1
}

func paramIndex(k []byte) int {
	switch string(k) {
	case "name":
		return pName
	case "uri":
		return pURI
	case "arguments":
		return pArguments
	case "_meta":
		return pMeta
	case "inputResponses":
		return pInputResponses
	case "requestState":
		return pRequestState
	}
	return -1
}

type segKind uint8

const (
	segKey    segKind = iota // a member: a, b is the key's raw text in data
	segIndex                 // an array element: a is the index
	segNewKey                // a key being read
)

// seg is one step of the path to the value being read.
type seg struct {
	a, b int32
	kind segKind
	esc  bool
}

// keyRec is one key of an open object, decoded: in data, or in scratch when
// it was written with escapes.
type keyRec struct {
	a, b      int32
	inScratch bool
	ascii     bool
	esc       bool
}

// member is the value of a recorded member and how many times it was seen.
type member struct{ a, b, n int32 }

// foldMapAt is the number of keys in an object past which duplicates are
// found with a map instead of comparing every pair.
const foldMapAt = 16

type scanner struct {
	data  []byte
	pos   int
	depth int

	err      *Error // the first refusal that does not stop the scan
	problems int    // refusals seen, recorded or not

	inArgs      bool
	keysEscaped bool
	idBad       bool // the id is ambiguous or holds a refused string or number

	keys    []keyRec // keys of the open objects
	scratch []byte   // decoded escaped keys
	folds   []map[string]int32

	top  [nTop]member
	par  [nParams]member
	path [MaxDepth + 1]seg
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

func (s *scanner) value(k kind) *Error {
	if s.pos >= len(s.data) {
		return s.syntax("unexpected end of input")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(k)
	case c == '[':
		return s.array()
	case c == '"':
		_, _, e := s.str(false)
		return e
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.unexpected()
}

func (s *scanner) literal(lit string) *Error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
		return s.syntax("invalid literal; expected " + lit)
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) array() *Error {
	if e := s.enter(); e != nil {
		return e
	}
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for i := int32(0); ; i++ {
		s.path[s.depth-1] = seg{kind: segIndex, a: i}
		if e := s.value(kindOther); e != nil {
			return e
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("unexpected end of input; expected ',' or ']'")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return s.unexpected()
		}
	}
}

func (s *scanner) enter() *Error {
	s.depth++
	if s.depth > MaxDepth {
		return s.newError(s.depth-1, "nesting deeper than "+strconv.Itoa(MaxDepth)+" levels")
	}
	s.pos++
	return nil
}

func (s *scanner) object(k kind) *Error {
	if e := s.enter(); e != nil {
		return e
	}
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	base, scratchBase := len(s.keys), len(s.scratch)
	var fold map[string]int32
	d := s.depth - 1
	for {
		s.path[d] = seg{kind: segNewKey}
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of input; expected a key")
			}
			return s.syntax("expected a key in quotes, found " + quoteByte(s.data[s.pos]))
		}
		start := s.pos
		esc, ascii, e := s.str(true)
		if e != nil {
			return e
		}
		rec := keyRec{a: int32(start + 1), b: int32(s.pos - 1), ascii: ascii, esc: esc}
		if esc {
			if s.inArgs {
				s.keysEscaped = true
			}
			n := len(s.scratch)
			s.scratch, _ = appendUnquoted(s.scratch, s.data[rec.a:rec.b])
			rec.a, rec.b, rec.inScratch = int32(n), int32(len(s.scratch)), true
		}
		s.path[d] = seg{kind: segKey, a: int32(start + 1), b: int32(s.pos - 1), esc: esc}
		kb := s.keyBytes(rec)
		if s.err == nil {
			fold = s.checkKey(base, rec, kb, fold)
		}
		s.keys = append(s.keys, rec)

		idx := -1
		switch k {
		case kindTop:
			if idx = topIndex(kb); idx < 0 {
				s.checkVariant(kb, topNames[:])
			}
		case kindParams:
			if idx = paramIndex(kb); idx < 0 {
				s.checkVariant(kb, paramNames[:])
			}
		}

		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of input; expected ':'")
			}
			return s.syntax("expected ':' after the key, found " + quoteByte(s.data[s.pos]))
		}
		s.pos++
		s.ws()

		vStart, problems := s.pos, s.problems
		child, inArgs := kindOther, s.inArgs
		if k == kindTop && idx == tParams {
			child = kindParams
		}
		if k == kindParams && idx == pArguments {
			s.inArgs = true
		}
		if e := s.value(child); e != nil {
			return e
		}
		s.inArgs = inArgs
		if idx >= 0 {
			m := member{a: int32(vStart), b: int32(s.pos)}
			if k == kindTop {
				m.n = s.top[idx].n + 1
				s.top[idx] = m
				if idx == tID && s.problems != problems {
					s.idBad = true
				}
			} else {
				m.n = s.par[idx].n + 1
				s.par[idx] = m
			}
		}

		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("unexpected end of input; expected ',' or '}'")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
			continue
		case '}':
			s.pos++
		default:
			return s.unexpected()
		}
		break
	}
	s.keys, s.scratch = s.keys[:base], s.scratch[:scratchBase]
	s.depth--
	return nil
}

func (s *scanner) keyBytes(k keyRec) []byte {
	if k.inScratch {
		return s.scratch[k.a:k.b]
	}
	return s.data[k.a:k.b]
}

// checkKey refuses a key that repeats, or case-folds to, an earlier key of
// the object whose keys start at base, that holds NUL, or that is __proto__.
// It returns the object's fold map, made once the object has more than
// foldMapAt keys.
func (s *scanner) checkKey(base int, k keyRec, kb []byte, fold map[string]int32) map[string]int32 {
	if k.esc && bytes.IndexByte(kb, 0) >= 0 {
		s.refuse(s.depth, "key "+show(kb, true)+" contains NUL; rename it")
		return fold
	}
	if string(kb) == "__proto__" {
		s.refuse(s.depth, `key "__proto__" sets the prototype in JavaScript code that copies objects; rename it`)
		return fold
	}
	if len(s.keys)-base < foldMapAt {
		for j := base; j < len(s.keys); j++ {
			o := s.keys[j]
			if o.ascii && k.ascii && int(o.b-o.a) != len(kb) {
				continue
			}
			ob := s.keyBytes(o)
			if o.ascii && k.ascii {
				if !asciiEqualFold(ob, kb) {
					continue
				}
			} else if !bytes.EqualFold(ob, kb) {
				continue
			}
			s.collide(o, k, ob, kb)
			return fold
		}
		return fold
	}
	if fold == nil {
		fold = s.foldMap()
		for j := base; j < len(s.keys); j++ {
			fold[string(foldKey(nil, s.keyBytes(s.keys[j])))] = int32(j)
		}
	}
	var buf [64]byte
	fk := foldKey(buf[:0], kb)
	if j, ok := fold[string(fk)]; ok {
		o := s.keys[j]
		s.collide(o, k, s.keyBytes(o), kb)
		return fold
	}
	fold[string(fk)] = int32(len(s.keys))
	return fold
}

// foldMap returns an empty map for the object at the current depth.
func (s *scanner) foldMap() map[string]int32 {
	for len(s.folds) < s.depth {
		s.folds = append(s.folds, nil)
	}
	m := s.folds[s.depth-1]
	if m == nil {
		m = make(map[string]int32)
		s.folds[s.depth-1] = m
	} else {
		clear(m)
	}
	return m
}

// collide refuses key k, which repeats or case-folds to the earlier key o.
func (s *scanner) collide(o, k keyRec, ob, kb []byte) {
	s.problems++
	if s.err != nil {
		return
	}
	obj := s.pathOf(s.depth - 1)
	e := s.newError(s.depth, "")
	if e.Member = show(ob, !plain(ob)); obj != "" {
		e.Member = obj + "." + e.Member
	}
	if bytes.Equal(ob, kb) {
		where := ""
		if obj != "" {
			where = " in " + obj
		}
		how := ""
		if o.esc || k.esc {
			how = " (spelled with escapes)"
		}
		e.Message = "repeated member " + show(kb, true) + where + how + ": a request must have one reading"
	} else {
		e.Message = e.Member + ": keys " + show(ob, true) + " and " + show(kb, true) + " differ only in case; rename one"
	}
	s.err = e
}

// checkVariant refuses a key that case-folds to one of names without being
// it: encoding/json matches struct fields case-insensitively.
func (s *scanner) checkVariant(kb []byte, names []string) {
	for _, n := range names {
		if len(kb) >= len(n) && strings.EqualFold(string(kb), n) {
			if n == "id" && s.depth == 1 {
				s.idBad = true
			}
			s.refuse(s.depth, "key "+show(kb, true)+" differs only in case from "+strconv.Quote(n)+"; spell it "+strconv.Quote(n))
			return
		}
	}
}

func asciiEqualFold(a, b []byte) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}

// foldKey appends k with every rune replaced by the least rune of its simple
// case-folding orbit, so foldKey(a) == foldKey(b) exactly when
// strings.EqualFold(a, b).
func foldKey(dst, k []byte) []byte {
	for i := 0; i < len(k); {
		c := k[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(k[i:])
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		dst = utf8.AppendRune(dst, least)
		i += n
	}
	return dst
}

// strSafe reports the bytes that stand for themselves in a JSON string.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string. It reports whether the string had escapes and whether
// its decoded text is ASCII.
func (s *scanner) str(key bool) (esc, ascii bool, _ *Error) {
	d := s.data
	i := s.pos + 1
	ascii = true
	what := "string"
	if key {
		what = "key"
	}
	for {
		for i < len(d) && strSafe[d[i]] {
			i++
		}
		if i >= len(d) {
			s.pos = i
			return esc, ascii, s.syntax("unterminated string")
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			return esc, ascii, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				s.pos = i
				return esc, ascii, s.syntax("unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d[i+2:])
				if !ok {
					s.pos = i
					return esc, ascii, s.syntax(`invalid \u escape in a string`)
				}
				i += 6
				if r >= 0x80 {
					ascii = false
				}
				if utf16.IsSurrogate(r) {
					if r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						if r2, ok := hex4(d[i+2:]); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
							i += 6
							continue
						}
					}
					s.refuse(s.depth, what+` has \u`+strconv.FormatInt(int64(r), 16)+
						" outside a UTF-16 surrogate pair; JSON parsers decode it differently")
				}
			default:
				s.pos = i
				return esc, ascii, s.syntax("invalid escape " + quoteByte(d[i+1]) + " in a string")
			}
		case c < 0x20:
			s.pos = i
			return esc, ascii, s.syntax("control character in a string; escape it")
		default:
			ascii = false
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n == 1 {
				s.refuse(s.depth, what+" is not valid UTF-8")
			}
			i += n
		}
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (s *scanner) number() *Error {
	d := s.data
	start, i := s.pos, s.pos
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		s.pos = i
		return s.syntax("invalid number")
	}
	intDigits := i - start
	if d[start] == '-' {
		intDigits--
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.pos = i
			return s.syntax("invalid number; expected a digit after '.'")
		}
	}
	// The number is below 10^(intDigits+exp): no float64 overflows below
	// 10^308, and without an exponent every one overflows from 10^309.
	exp := 0
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		neg := i < len(d) && d[i] == '-'
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		if digits() == 0 {
			s.pos = i
			return s.syntax("invalid number; expected a digit in the exponent")
		}
		for _, c := range d[j:i] {
			exp = min(exp*10+int(c-'0'), 1<<20)
		}
		if neg {
			exp = -exp
		}
	}
	s.pos = i
	over := exp == 0 && intDigits > 309
	if !over && intDigits+exp > 308 {
		_, err := strconv.ParseFloat(string(d[start:i]), 64)
		over = err != nil
	}
	if over {
		s.refuse(s.depth, "number "+show(d[start:i], false)+" overflows a float64; JSON parsers read it differently")
	}
	return nil
}

// Errors.

// refuse records a problem that does not stop the scan, at the path of
// length n.
func (s *scanner) refuse(n int, msg string) {
	s.problems++
	if s.err == nil {
		s.err = s.newError(n, msg)
	}
}

func (s *scanner) newError(n int, msg string) *Error {
	code := int64(codeInvalidRequest)
	if n >= 2 && s.path[0].kind == segKey && string(s.segKey(s.path[0])) == "params" {
		code = codeInvalidParams
	}
	p := s.pathOf(n)
	if p != "" {
		msg = p + ": " + msg
	}
	return &Error{Code: code, Member: p, Message: msg}
}

func (s *scanner) syntax(msg string) *Error {
	p := s.pathOf(s.depth)
	e := &Error{Code: codeParse, Member: p, Message: "invalid JSON at byte " + strconv.Itoa(s.pos) + ": " + msg}
	if p != "" {
		e.Message += " (in " + p + ")"
	}
	return e
}

func (s *scanner) unexpected() *Error {
	return s.syntax("unexpected " + quoteByte(s.data[s.pos]))
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

func (s *scanner) segKey(g seg) []byte {
	k := s.data[g.a:g.b]
	if g.esc {
		k, _ = appendUnquoted(nil, k)
	}
	return k
}

// pathOf renders the first n steps of the path, eliding the middle of a long
// one.
func (s *scanner) pathOf(n int) string {
	var parts []string
	size := 0
	for _, g := range s.path[:min(n, len(s.path))] {
		var p string
		switch g.kind {
		case segIndex:
			p = "[" + strconv.Itoa(int(g.a)) + "]"
		case segKey:
			k := s.segKey(g)
			p = show(k, !plain(k))
			if len(parts) > 0 {
				p = "." + p
			}
		default:
			continue
		}
		parts = append(parts, p)
		size += len(p)
	}
	if size > 200 && len(parts) > 4 {
		parts = append(parts[:2:2], append([]string{".…"}, parts[len(parts)-2:]...)...)
	}
	return strings.Join(parts, "")
}

// plain reports whether a key can be shown in a path without quotes.
func plain(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, r := range string(k) {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-$@/:~+", r) {
			return false
		}
	}
	return true
}

// show renders client text for a message, clipped to 64 bytes without
// cutting a rune, with unprintable runes escaped.
func show(b []byte, quote bool) string {
	const max = 64
	out := make([]byte, 0, max+8)
	if quote {
		out = append(out, '"')
	}
	body := len(out)
	var tmp [16]byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		var rep []byte
		switch {
		case r == utf8.RuneError && n == 1:
			rep = append(append(tmp[:0], `\x`...), "0123456789abcdef"[b[i]>>4], "0123456789abcdef"[b[i]&15])
		case r == '"' || r == '\\':
			rep = append(tmp[:0], '\\', byte(r))
		case strconv.IsPrint(r):
			rep = b[i : i+n]
		default:
			q := strconv.AppendQuoteRune(tmp[:0], r)
			rep = q[1 : len(q)-1]
		}
		if len(out)-body+len(rep) > max {
			out = append(out, "…"...)
			break
		}
		out = append(out, rep...)
		i += n
	}
	if quote {
		out = append(out, '"')
	}
	return string(out)
}

// The envelope.

func (s *scanner) raw(m member) json.RawMessage {
	if m.n == 0 {
		return nil
	}
	return s.data[m.a:m.b:m.b]
}

// strMember reads a recorded member as a string.
func (s *scanner) strMember(m member) (string, bool) {
	if m.n == 0 || s.data[m.a] != '"' {
		return "", false
	}
	b := s.data[m.a+1 : m.b-1]
	if bytes.IndexByte(b, '\\') < 0 {
		return intern(b), true
	}
	d, _ := appendUnquoted(nil, b)
	return string(d), true
}

// validID reports whether an id is a string or an integer of at most 2^53-1
// in magnitude: the Go SDK truncates other numbers to an int64, so 1 and 1.5
// would be one request to it.
// shallowID returns the id of a message whose reading stopped early: its
// top-level "id" member when it has exactly one (and no member that folds
// to "id"), with a valid id value; nil otherwise. Values are skipped by
// their brackets, not read.
func shallowID(body []byte) json.RawMessage {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil
	}
	var id json.RawMessage
	n := 0
	for i = skipWS(body, i+1); i < len(body) && body[i] != '}'; {
		if body[i] != '"' {
			return nil
		}
		end := skipStr(body, i)
		if end < 0 {
			return nil
		}
		key, ok := appendUnquoted(nil, body[i+1:end-1])
		if !ok {
			return nil
		}
		i = skipWS(body, end)
		if i >= len(body) || body[i] != ':' {
			return nil
		}
		i = skipWS(body, i+1)
		start := i
		if i = skipShallow(body, i); i < 0 {
			return nil
		}
		if strings.EqualFold(string(key), "id") {
			n++
			if string(key) == "id" {
				id = body[start:i]
			}
		}
		i = skipWS(body, i)
		if i < len(body) && body[i] == ',' {
			i = skipWS(body, i+1)
		}
	}
	id = bytes.TrimRight(id, " \t\r\n")
	if n != 1 || !validID(id) || !json.Valid(id) || !utf8.Valid(id) {
		return nil
	}
	return bytes.Clone(id)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipStr returns the end of the string starting at b[i] ('"'), -1 if it
// is not terminated.
func skipStr(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipShallow returns the end of the value at b[i], counting brackets
// (strings skipped whole) without reading what they hold; -1 if it does not
// end.
func skipShallow(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if i = skipStr(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || isSpace(c)):
			return i
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}

func validID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	d := id
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 16 || (d[0] == '0' && len(id) > 1) {
		return false // 0 has no sign: -0 and 0 are one id to most peers
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(d) < 16 || string(d) <= "9007199254740991"
}

// cleanID returns a copy of the id when it was read once, unambiguously.
func (s *scanner) cleanID() json.RawMessage {
	id := s.top[tID]
	if id.n != 1 || s.idBad || !validID(s.raw(id)) {
		return nil
	}
	return bytes.Clone(s.raw(id))
}

func (s *scanner) envelope() (*Message, error) {
	fail := func(member, msg string) (*Message, error) {
		return nil, &Error{Code: codeInvalidRequest, Member: member, Message: msg, ID: s.cleanID()}
	}
	if v, ok := s.strMember(s.top[tJSONRPC]); !ok || v != "2.0" {
		return fail("jsonrpc", `"jsonrpc" must be "2.0"`)
	}
	m := &Message{
		Body:   s.data,
		ID:     s.raw(s.top[tID]),
		Params: s.raw(s.top[tParams]),
		Result: s.raw(s.top[tResult]),
		Error:  s.raw(s.top[tError]),
	}
	isResponse := m.Result != nil || m.Error != nil
	if s.top[tMethod].n > 0 {
		var ok bool
		if m.Method, ok = s.strMember(s.top[tMethod]); !ok || m.Method == "" {
			return fail("method", `"method" must be a non-empty string`)
		}
		if isResponse {
			return fail("method", `a message has "method" (a request) or "result"/"error" (a response), not both`)
		}
		if m.ID != nil && !validID(m.ID) {
			if string(m.ID) == "null" {
				return fail("id", `"id" is null: a request has a string or number id, a notification has no "id"`)
			}
			return fail("id", `"id" must be a string or an integer of at most 2^53-1 in magnitude`)
		}
		if m.Params != nil && m.Params[0] != '{' && m.Params[0] != '[' {
			return fail("params", `"params" must be an object or an array`)
		}
	} else {
		switch {
		case !isResponse:
			return fail("", `a message needs "method" (a request or notification) or "result" or "error" (a response)`)
		case m.Result != nil && m.Error != nil:
			return fail("result", `a response has "result" or "error", not both`)
		case m.ID == nil:
			return fail("id", `a response needs an "id"`)
		case !validID(m.ID) && string(m.ID) != "null":
			return fail("id", `"id" must be a string, an integer of at most 2^53-1 in magnitude, or null`)
		}
	}
	if s.par[pName].n > 0 {
		m.Name, m.HasName = s.strMember(s.par[pName])
	}
	if s.par[pURI].n > 0 {
		m.URI, m.HasURI = s.strMember(s.par[pURI])
	}
	if s.par[pRequestState].n > 0 {
		m.RequestState, m.HasRequestState = s.strMember(s.par[pRequestState])
	}
	if m.Arguments = s.raw(s.par[pArguments]); string(m.Arguments) == "null" {
		m.Arguments = nil
	}
	m.Meta = s.raw(s.par[pMeta])
	m.InputResponses = s.raw(s.par[pInputResponses])
	m.KeysEscaped = s.keysEscaped
	return m, nil
}

// intern returns common method names without allocating.
func intern(b []byte) string {
	switch string(b) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "initialize":
		return "initialize"
	case "notifications/initialized":
		return "notifications/initialized"
	case "ping":
		return "ping"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "resources/templates/list":
		return "resources/templates/list"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/progress":
		return "notifications/progress"
	case "2.0":
		return "2.0"
	}
	return string(b)
}

// Strings.

// appendUnquoted appends the decoded text of a JSON string's body (without
// its quotes), as encoding/json decodes it; ok is false for a malformed body.
func appendUnquoted(dst, b []byte) (_ []byte, ok bool) {
	for i := 0; i < len(b); {
		if b[i] != '\\' {
			j := i + 1
			for j < len(b) && b[j] != '\\' {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(b) {
			return dst, false
		}
		c := b[i+1]
		i += 2
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b[i:])
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					r2, _ = hex4(b[i+2:])
				}
				if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
					r = p
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}
