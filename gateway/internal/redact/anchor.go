package redact

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A rule's regular expression is run only where it can match: around the
// occurrences of its keywords. This file works out, from the expression's
// syntax, where that is.
//
// A plan splits one alternative of a rule's expression into
//
//	prefix · element · suffix
//
// where every string the element can match contains one of the rule's
// keywords (ASCII case folded), and the prefix matches at most before
// bytes. A match that uses an occurrence of the element at [s, e) then
// starts at or after s-before and ends at or before the end bound of the
// suffix computed from e (endBound), and its suffix starts with a string
// that check matches. Every match of the rule contains such an element, so
// scanning windows around the keyword occurrences that pass the check
// finds every match a scan of the whole text finds.
//
// Byte lengths assume that the text holds neither U+212A KELVIN SIGN nor
// U+017F LATIN SMALL LETTER LONG S, the only non-ASCII runes that fold to
// ASCII letters; a text that holds one is scanned whole.

// plan is one way a rule's matches are anchored on its keywords.
type plan struct {
	elems    map[int][]elemOcc // keyword index -> element strings holding it
	start    startBound        // where a match starts at the earliest, from the element's start
	end      endBound          // where a match ends at the latest, from the element's end
	check    *lazyRegexp       // anchored necessary condition on the suffix; nil when none
	checkLen int               // bytes of text check needs
	quick    *quickCheck       // a cheaper necessary condition run before check; nil when none
	// before and after are literals (lower case) that every match holds
	// before and after the element.
	before, after []string
}

// elemOcc is an element string (lower case) and where a keyword sits in it.
type elemOcc struct {
	s   string
	off int
}

const (
	maxElemStrings = 64  // strings an element may expand to
	maxCheckBytes  = 256 // bytes of suffix a check reads at most
)

const maxAlternatives = 16 // alternatives a rule is split into for planning

// plans returns a plan for each alternative of re, or nil when some
// alternative has none (the rule is then run on the whole text).
func plans(re *syntax.Regexp, keywords []string) []plan {
	var out []plan
	budget := maxAlternatives
	if !planSeq(flatten(re), keywords, &out, &budget) {
		return nil
	}
	return out
}

// planSeq plans a sequence of elements; when no run of its elements holds
// a keyword everywhere, it splits the sequence at its first alternation
// (a·(x|y)·b is a·x·b or a·y·b) and plans each part.
func planSeq(seq []*syntax.Regexp, keywords []string, out *[]plan, budget *int) bool {
	if p, ok := planFor(seq, keywords); ok {
		*out = append(*out, p)
		return true
	}
	for i, e := range seq {
		for e.Op == syntax.OpCapture {
			e = e.Sub[0]
		}
		if e.Op != syntax.OpAlternate {
			continue
		}
		*budget -= len(e.Sub) - 1
		if *budget < 0 {
			return false
		}
		for _, alt := range e.Sub {
			var next []*syntax.Regexp
			next = append(next, seq[:i]...)
			next = append(next, flatten(alt)...)
			next = append(next, seq[i+1:]...)
			if !planSeq(next, keywords, out, budget) {
				return false
			}
		}
		return true
	}
	return false
}

// flatten lists the elements of a concatenation, looking through captures
// and nested concatenations (which do not change what matches).
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flatten(re.Sub[0])
	case syntax.OpConcat:
		var out []*syntax.Regexp
		for _, s := range re.Sub {
			out = append(out, flatten(s)...)
		}
		return out
	}
	return []*syntax.Regexp{re}
}

// planFor finds the first run of elements elems[i..j] whose strings all
// hold a keyword.
func planFor(elems []*syntax.Regexp, keywords []string) (plan, bool) {
	for i := range elems {
		var set []string
		for j := i; j < len(elems); j++ {
			next, ok := expand(elems[j])
			if !ok {
				break
			}
			if set, ok = cross(set, next, j == i); !ok {
				break
			}
			occ, ok := occurrences(set, keywords)
			if !ok {
				continue
			}
			prefix, suffix := elems[:i], elems[j+1:]
			p := plan{
				elems:  occ,
				start:  compileStart(prefix),
				end:    compileEnd(suffix),
				before: literals(prefix),
				after:  literals(suffix),
			}
			if chk, n, ok := buildCheck(suffix); ok {
				p.check, p.checkLen = chk, n
				p.quick = buildQuick(suffix)
			}
			return p, true
		}
	}
	return plan{}, false
}

// literals lists the ASCII literals (lower case) every match of the
// sequence holds.
func literals(seq []*syntax.Regexp) []string {
	var out []string
	for _, e := range seq {
		switch e.Op {
		case syntax.OpLiteral:
			var b strings.Builder
			ascii := true
			for _, r := range e.Rune {
				ascii = ascii && r < utf8.RuneSelf
				b.WriteRune(foldRune(r))
			}
			if ascii && b.Len() >= 2 && !slices.Contains(out, b.String()) {
				out = append(out, b.String())
			}
		case syntax.OpCapture, syntax.OpConcat, syntax.OpPlus:
			out = append(out, literals(e.Sub)...)
		case syntax.OpRepeat:
			if e.Min > 0 {
				out = append(out, literals(e.Sub)...)
			}
		}
	}
	return out
}

// occurrences maps each keyword to the strings of set holding it and where,
// or reports false when some string holds no keyword.
func occurrences(set []string, keywords []string) (map[int][]elemOcc, bool) {
	out := make(map[int][]elemOcc)
	for _, s := range set {
		found := false
		for k, kw := range keywords {
			for off := 0; ; {
				i := strings.Index(s[off:], kw)
				if i < 0 {
					break
				}
				out[k] = append(out[k], elemOcc{s: s, off: off + i})
				found = true
				off += i + 1
			}
		}
		if !found {
			return nil, false
		}
	}
	return out, true
}

// cross returns the concatenations of every string of a with every string
// of b (b alone when first), false when there would be too many.
func cross(a, b []string, first bool) ([]string, bool) {
	if first {
		return b, len(b) <= maxElemStrings
	}
	if len(a)*len(b) > maxElemStrings {
		return nil, false
	}
	out := make([]string, 0, len(a)*len(b))
	seen := make(map[string]bool, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			if s := x + y; !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out, true
}

// expand returns every string re matches, folded to lower case as the
// scanner folds text, or false when they are too many or infinite.
func expand(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			b.WriteRune(foldRune(r))
		}
		return []string{b.String()}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxElemStrings {
				return nil, false
			}
		}
		seen := map[string]bool{}
		var out []string
		for i := 0; i < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if s := string(foldRune(r)); !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
		return out, true
	case syntax.OpCapture:
		return expand(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := expand(re.Sub[0])
		if !ok {
			return nil, false
		}
		return union([]string{""}, sub)
	case syntax.OpConcat:
		var set []string
		for i, s := range re.Sub {
			next, ok := expand(s)
			if !ok {
				return nil, false
			}
			if set, ok = cross(set, next, i == 0); !ok {
				return nil, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		var set []string
		for _, s := range re.Sub {
			next, ok := expand(s)
			if !ok {
				return nil, false
			}
			if set, ok = union(set, next); !ok {
				return nil, false
			}
		}
		return set, true
	case syntax.OpRepeat:
		if re.Max < 0 || re.Max > 3 {
			return nil, false
		}
		sub, ok := expand(re.Sub[0])
		if !ok {
			return nil, false
		}
		var set []string
		power := []string{""}
		for n := 0; n <= re.Max; n++ {
			if n >= re.Min {
				if set, ok = union(set, power); !ok {
					return nil, false
				}
			}
			if power, ok = cross(power, sub, false); !ok {
				return nil, false
			}
		}
		return set, true
	}
	return nil, false
}

func union(a, b []string) ([]string, bool) {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, len(out) <= maxElemStrings
}

// foldRune folds r as the scanner folds text: ASCII upper case to lower
// case, and the two non-ASCII runes that fold to ASCII letters to them.
func foldRune(r rune) rune {
	switch {
	case 'A' <= r && r <= 'Z':
		return r + 'a' - 'A'
	case r == '\u212A':
		return 'k'
	case r == '\u017F':
		return 's'
	}
	return r
}

// foldsToASCII reports the runes that (?i) matches against an ASCII letter.
func foldsToASCII(r rune) bool { return r == '\u212A' || r == '\u017F' }

// maxLen is the most bytes re can match, -1 when unbounded. Runes that
// fold to ASCII letters count as one byte (see the file comment).
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpNoMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += runeWidth(r, re.Flags&syntax.FoldCase != 0)
		}
		return n
	case syntax.OpCharClass:
		w := 0
		for i := 0; i < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for hi >= lo && foldsToASCII(hi) {
				hi--
			}
			if hi >= lo {
				w = max(w, utf8.RuneLen(hi))
			}
		}
		return w
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		t := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			t += n
		}
		return t
	case syntax.OpAlternate:
		t := 0
		for _, s := range re.Sub {
			n := maxLen(s)
			if n < 0 {
				return -1
			}
			t = max(t, n)
		}
		return t
	}
	return -1
}

// runeWidth is the widest encoding of r, or of the runes it folds to.
func runeWidth(r rune, fold bool) int {
	w := utf8.RuneLen(r)
	if w < 0 {
		w = utf8.RuneLen(utf8.RuneError)
	}
	if !fold {
		return w
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if !foldsToASCII(f) {
			w = max(w, utf8.RuneLen(f))
		}
	}
	return w
}

// buildCheck returns an anchored expression that every suffix of a match
// starts with, reading at most maxCheckBytes, and how many bytes it reads;
// false when it would say nothing.
func buildCheck(suffix []*syntax.Regexp) (*lazyRegexp, int, bool) {
	p := prefixOfSeq(suffix, maxCheckBytes)
	if p == nil || maxLen(p) <= 0 {
		return nil, 0, false
	}
	re, err := compileLazy(`^(?:` + p.String() + `)`)
	if err != nil {
		return nil, 0, false
	}
	return re, maxLen(p), true
}

// prefixOfSeq returns an expression, with no empty-width assertions and
// matching at most budget bytes, that matches a prefix of every string the
// sequence matches; nil for the empty expression.
func prefixOfSeq(seq []*syntax.Regexp, budget int) *syntax.Regexp {
	var out []*syntax.Regexp
	for _, e := range seq {
		if n := maxLen(e); n >= 0 && n <= budget {
			if c := noAssertions(e); c != nil {
				out = append(out, c)
			}
			budget -= n
			continue
		}
		if p := prefixOf(e, budget); p != nil {
			out = append(out, p)
		}
		break
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: out}
}

// prefixOf is prefixOfSeq for one element.
func prefixOf(re *syntax.Regexp, budget int) *syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return prefixOf(re.Sub[0], budget)
	case syntax.OpConcat:
		return prefixOfSeq(re.Sub, budget)
	case syntax.OpPlus:
		return prefixOf(re.Sub[0], budget)
	case syntax.OpRepeat:
		if re.Min == 0 {
			return nil
		}
		if n := maxLen(re.Sub[0]); n >= 0 && n*re.Min <= budget {
			sub := noAssertions(re.Sub[0])
			if sub == nil {
				return nil
			}
			return &syntax.Regexp{Op: syntax.OpRepeat, Flags: re.Flags, Min: re.Min, Max: re.Min, Sub: []*syntax.Regexp{sub}}
		}
		return prefixOf(re.Sub[0], budget)
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		for _, s := range re.Sub {
			p := prefixOf(s, budget)
			if p == nil {
				return nil // one alternative needs nothing
			}
			subs = append(subs, p)
		}
		return &syntax.Regexp{Op: syntax.OpAlternate, Flags: re.Flags, Sub: subs}
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		if maxLen(re) <= budget {
			return re
		}
	}
	return nil
}

// noAssertions returns a copy of re with empty-width assertions replaced by
// the empty string (so that a check run on a cut-out of the text never
// fails where the text would match), nil when nothing is left.
func noAssertions(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
		return nil
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpNoMatch:
		return re
	}
	c := *re
	c.Sub = nil
	for _, s := range re.Sub {
		n := noAssertions(s)
		if n == nil {
			n = &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
		c.Sub = append(c.Sub, n)
	}
	if c.Op == syntax.OpCapture { // no captures in checks
		return c.Sub[0]
	}
	return &c
}

// startBound gives, for a sequence ending at or after q in t, the
// earliest position where it can start.
type startBound interface {
	start(t string, q int) int
}

type (
	fixedStart int          // at most this many bytes
	seqStart   []startBound // one before the other, last first
	altStart   []startBound // any of them
	runStart   struct{ in func(rune) bool }
	textStart  struct{} // anywhere from the start of the text
)

func (n fixedStart) start(_ string, q int) int { return max(0, q-int(n)) }

func (s seqStart) start(t string, q int) int {
	for _, b := range s {
		q = b.start(t, q)
	}
	return q
}

func (a altStart) start(t string, q int) int {
	s := q
	for _, b := range a {
		s = min(s, b.start(t, q))
	}
	return s
}

// start of a repetition of single runes: it cannot get before the last
// rune before q that it does not match.
func (r runStart) start(t string, q int) int {
	for q > 0 {
		c, w := utf8.DecodeLastRuneInString(t[:q])
		if !r.in(c) {
			break
		}
		q -= w
	}
	return q
}

func (textStart) start(string, int) int { return 0 }

// compileStart builds the start bound of a sequence of elements.
func compileStart(seq []*syntax.Regexp) startBound {
	var out seqStart
	fixed := 0
	for i := len(seq) - 1; i >= 0; i-- {
		e := seq[i]
		if n := maxLen(e); n >= 0 {
			fixed += n
			continue
		}
		if fixed > 0 {
			out = append(out, fixedStart(fixed))
			fixed = 0
		}
		out = append(out, unboundedStart(e))
	}
	if fixed > 0 {
		out = append(out, fixedStart(fixed))
	}
	return out
}

func unboundedStart(re *syntax.Regexp) startBound {
	switch re.Op {
	case syntax.OpCapture, syntax.OpQuest:
		return compileStart(flatten(re.Sub[0]))
	case syntax.OpConcat:
		return compileStart(flatten(re))
	case syntax.OpAlternate:
		var out altStart
		for _, s := range re.Sub {
			out = append(out, compileStart([]*syntax.Regexp{s}))
		}
		return out
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		if in := single(re.Sub[0]); in != nil {
			return runStart{in}
		}
	}
	return textStart{}
}

// endBound gives, for a sequence starting at or before q in t, the latest
// position where it can end.
type endBound interface {
	end(t string, q int) int
}

type (
	fixedEnd int        // at most this many bytes
	seqEnd   []endBound // one after the other
	altEnd   []endBound // any of them
	runEnd   struct{ in func(rune) bool }
	textEnd  struct{} // anywhere up to the end of the text
)

func (n fixedEnd) end(t string, q int) int { return min(len(t), q+int(n)) }

func (s seqEnd) end(t string, q int) int {
	for _, b := range s {
		q = b.end(t, q)
	}
	return q
}

func (a altEnd) end(t string, q int) int {
	e := q
	for _, b := range a {
		e = max(e, b.end(t, q))
	}
	return e
}

// end of a repetition of single runes: it cannot get past the first rune
// at or after q that it does not match.
func (r runEnd) end(t string, q int) int {
	for q < len(t) {
		c, w := utf8.DecodeRuneInString(t[q:])
		if !r.in(c) {
			break
		}
		q += w
	}
	return q
}

func (textEnd) end(t string, _ int) int { return len(t) }

// compileEnd builds the end bound of a sequence of elements.
func compileEnd(seq []*syntax.Regexp) endBound {
	var out seqEnd
	fixed := 0
	for _, e := range seq {
		if n := maxLen(e); n >= 0 {
			fixed += n
			continue
		}
		if fixed > 0 {
			out = append(out, fixedEnd(fixed))
			fixed = 0
		}
		out = append(out, unboundedEnd(e))
	}
	if fixed > 0 {
		out = append(out, fixedEnd(fixed))
	}
	return out
}

func unboundedEnd(re *syntax.Regexp) endBound {
	switch re.Op {
	case syntax.OpCapture, syntax.OpQuest:
		return compileEnd(flatten(re.Sub[0]))
	case syntax.OpConcat:
		return compileEnd(flatten(re))
	case syntax.OpAlternate:
		var out altEnd
		for _, s := range re.Sub {
			out = append(out, compileEnd([]*syntax.Regexp{s}))
		}
		return out
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		if in := single(re.Sub[0]); in != nil {
			return runEnd{in}
		}
	}
	return textEnd{}
}

// single returns the runes re matches when it matches exactly one rune.
func single(re *syntax.Regexp) func(rune) bool {
	switch re.Op {
	case syntax.OpCapture:
		return single(re.Sub[0])
	case syntax.OpAnyChar:
		return func(rune) bool { return true }
	case syntax.OpAnyCharNotNL:
		return func(r rune) bool { return r != '\n' }
	case syntax.OpCharClass:
		ranges := re.Rune
		return func(r rune) bool {
			for i := 0; i < len(ranges); i += 2 {
				if ranges[i] <= r && r <= ranges[i+1] {
					return true
				}
			}
			return false
		}
	case syntax.OpLiteral:
		if len(re.Rune) != 1 {
			return nil
		}
		want, fold := re.Rune[0], re.Flags&syntax.FoldCase != 0
		return func(r rune) bool {
			if r == want {
				return true
			}
			if fold {
				for f := unicode.SimpleFold(want); f != want; f = unicode.SimpleFold(f) {
					if r == f {
						return true
					}
				}
			}
			return false
		}
	}
	return nil
}

// quickCheck is a necessary condition on the bytes after a keyword element,
// for suffixes that start with optional repetitions of single runes (skip,
// at most maxSkip bytes) followed by a required element whose first byte is
// in first: some byte in first must occur before the first byte that is in
// neither set, within maxSkip bytes. It saves running check on most keyword
// occurrences in ordinary text.
type quickCheck struct {
	skip, first [256]bool
	maxSkip     int
}

func (c *quickCheck) pass(t string, q int) bool {
	for i := q; i < len(t) && i <= q+c.maxSkip; i++ {
		b := t[i]
		if c.first[b] {
			return true
		}
		if !c.skip[b] {
			return false
		}
	}
	return false
}

// buildQuick derives a quickCheck from a suffix, nil when it has no such
// shape.
func buildQuick(suffix []*syntax.Regexp) *quickCheck {
	c := &quickCheck{}
	for _, e := range suffix {
		for e.Op == syntax.OpCapture {
			e = e.Sub[0]
		}
		switch e.Op {
		case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
			syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
			return nil // an assertion here could end the match early
		case syntax.OpQuest, syntax.OpStar, syntax.OpRepeat:
			if e.Op == syntax.OpRepeat && e.Min > 0 {
				break
			}
			if !addBytes(&c.skip, e.Sub[0], true) {
				return nil
			}
			n := maxLen(e)
			if n < 0 {
				return nil
			}
			c.maxSkip += n
			continue
		}
		if !firstBytes(&c.first, e) {
			return nil
		}
		return c
	}
	return nil
}

// addBytes adds to set the first bytes of the runes re matches, when re
// matches exactly one rune (single is false: any non-empty match).
func addBytes(set *[256]bool, re *syntax.Regexp, single bool) bool {
	switch re.Op {
	case syntax.OpCharClass:
		for i := 0; i < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
				set[r] = true
			}
			if hi >= utf8.RuneSelf {
				for b := 0xC0; b < 0x100; b++ {
					set[b] = true
				}
			}
		}
		return true
	case syntax.OpLiteral:
		if single && len(re.Rune) != 1 {
			return false
		}
		r := re.Rune[0]
		rs := []rune{r}
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				rs = append(rs, f)
			}
		}
		for _, r := range rs {
			var buf [utf8.UTFMax]byte
			utf8.EncodeRune(buf[:], r)
			set[buf[0]] = true
		}
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range set {
			set[b] = true
		}
		return true
	}
	return false
}

// firstBytes adds to set the bytes a non-empty match of re can start with;
// false when re may match the empty string or is too complex.
func firstBytes(set *[256]bool, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(set, re.Sub[0])
	case syntax.OpRepeat:
		return re.Min > 0 && firstBytes(set, re.Sub[0])
	case syntax.OpConcat:
		return len(re.Sub) > 0 && firstBytes(set, re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !firstBytes(set, s) {
				return false
			}
		}
		return true
	case syntax.OpCharClass, syntax.OpLiteral, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return addBytes(set, re, false)
	}
	return false
}

// appendWindows appends to out the windows of t where a match can use
// the element around the occurrence of keyword k at p, after the checks.
// Each check run is charged to budget.
func (pl *plan) appendWindows(out []window, t string, p, k int, budget *int) []window {
	for _, occ := range pl.elems[k] {
		es := p - occ.off
		ee := es + len(occ.s)
		if es < 0 || ee > len(t) || !equalFold(t[es:ee], occ.s) {
			continue
		}
		if pl.quick != nil && !pl.quick.pass(t, ee) {
			continue
		}
		if pl.check != nil {
			in := t[ee:min(len(t), ee+pl.checkLen+utf8.UTFMax)]
			if *budget -= len(in); !pl.check.MatchString(in) {
				continue
			}
		}
		w := window{start: pl.start.start(t, es), end: pl.end.end(t, ee)}
		if !containsAll(t[w.start:es], pl.before) || !containsAll(t[ee:w.end], pl.after) {
			continue
		}
		w.start = max(0, w.start-utf8.UTFMax)
		for w.start > 0 && !utf8.RuneStart(t[w.start]) {
			w.start--
		}
		w.end = min(len(t), w.end+utf8.UTFMax)
		for w.end < len(t) && !utf8.RuneStart(t[w.end]) {
			w.end++
		}
		out = append(out, w)
	}
	return out
}
