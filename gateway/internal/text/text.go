// Package text bounds and cleans text that came from a peer (a client, an
// upstream, a web page) before the gateway quotes it: in an error, a log
// line, a record or on a terminal.
package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis marks where [Clip] cut a text.
const Ellipsis = "…"

// Clip returns s if it has at most max bytes, else its longest prefix of at
// most max bytes that ends on a rune boundary, followed by [Ellipsis]. It
// never cuts a rune in two.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return Cut(s, max) + Ellipsis
}

// Cut returns the longest prefix of s of at most max bytes that ends on a
// rune boundary, with no mark: for a caller that says otherwise that it
// cut, or bounds what it keeps without saying.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max < 0 {
		max = 0
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// ClipRunes is [Clip] counting runes (an invalid byte counts as one) in
// place of bytes: for text that must fit a column or a line, where a
// rune is about a column wide.
func ClipRunes(s string, max int) string {
	if max < 0 {
		max = 0
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + Ellipsis
		}
		n++
	}
	return s
}

// Sanitize returns s safe to print on a terminal or in a log: escape
// sequences (CSI, OSC, DCS and the other ESC sequences) are removed whole;
// carriage returns (but one before a newline, which goes), vertical tabs,
// form feeds and the Unicode line and paragraph separators become spaces;
// every other [Invisible] character but tab and newline is removed;
// invalid UTF-8 becomes U+FFFD. Text a peer put in a name, a description,
// a result or an error cannot then move the cursor, clear a line,
// recolour or reorder what is printed, nor hide text in it: format
// characters (zero-width spaces, tag characters) would make two different
// names read the same or carry text no reader sees; what is lost with
// them is the joining of emoji sequences and of a few scripts. Where a
// person must see such a character, use [Escape].
func Sanitize(s string) string {
	if Plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1) // the last rune written
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i = skipEscape(s, i)
			prev = -1
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		w := r
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			w = -1
		case r == '\r', r == '\v', r == '\f', r == '\u2028', r == '\u2029':
			b.WriteByte(' ')
			w = ' '
		case r == '\t', r == '\n':
			b.WriteRune(r)
		case Presentation(prev, r):
			b.WriteRune(r)
		case Invisible(r):
			w = -1
		default:
			b.WriteRune(r)
		}
		prev = w
		i += n
	}
	return b.String()
}

// Presentation reports a presentation selector that [Sanitize] and
// [Escape] keep as it is: U+FE0E (text style) or U+FE0F (emoji style)
// right after a rune that is drawn (⚠️, 1️⃣), where it only chooses how
// that rune looks. Anywhere else, and every other variation selector, is
// [Invisible]: a run of selectors can carry data no reader sees.
func Presentation(prev, r rune) bool {
	return (r == '\ufe0e' || r == '\ufe0f') && prev > ' ' && !Invisible(prev) && !unicode.IsSpace(prev) && !unicode.Is(unicode.Mn, prev)
}

// OneLine is [Sanitize] with every run of white space (newlines and tabs
// included) folded into one space and the ends trimmed: for a table cell
// or a log field.
func OneLine(s string) string {
	return strings.Join(strings.Fields(Sanitize(s)), " ")
}

// Invisible reports a character that can hide, disguise or reorder the
// text around it: a control character (C0, DEL, C1), a format character
// (Unicode category Cf: the bidirectional controls, zero-width spaces and
// joiners, the byte order mark, the tag characters), a line or paragraph
// separator, a variation selector (which can carry hidden data after any
// character) or another character Unicode says to render as nothing (the
// Hangul fillers, the combining grapheme joiner).
func Invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' ||
		unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// Escape returns s with every [Invisible] character written as an escape
// a person can see (\u200b; \U000e0041 past U+FFFF) and every byte of
// invalid UTF-8 as \xff: for text a person must judge (a diff, an
// approval, an audit row), where a hidden character is what they need to
// see. The result is one line.
func Escape(s string) string {
	e, _ := escape(s, false, -1)
	return e
}

// EscapeLines is [Escape] keeping tabs and newlines: for text shown as it
// was laid out.
func EscapeLines(s string) string {
	e, _ := escape(s, true, -1)
	return e
}

// EscapeCut is [Escape] cut to at most limit bytes, never inside a rune
// or an escape; it reports whether it cut.
func EscapeCut(s string, limit int) (string, bool) {
	return escape(s, false, max(limit, 0))
}

// escape writes s as Escape (lines: EscapeLines does), stopping before
// the first character whose form would take it past limit bytes (no
// limit when limit < 0); it reports whether it stopped.
func escape(s string, lines bool, limit int) (string, bool) {
	if Plain(s) && (lines || !strings.ContainsAny(s, "\t\n")) {
		if limit >= 0 && len(s) > limit {
			return s[:limit], true
		}
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	var piece [10]byte
	prev := rune(-1) // the last rune written as it is
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		w := rune(-1)
		var p []byte
		switch {
		case r == utf8.RuneError && n <= 1:
			p = fmt.Appendf(piece[:0], `\x%02x`, s[i])
		case lines && (r == '\t' || r == '\n'), Presentation(prev, r):
			p, w = append(piece[:0], s[i:i+n]...), r
		case Invisible(r) && r > 0xffff:
			p = fmt.Appendf(piece[:0], `\U%08x`, r)
		case Invisible(r):
			p = fmt.Appendf(piece[:0], `\u%04x`, r)
		default:
			p, w = append(piece[:0], s[i:i+n]...), r
		}
		if limit >= 0 && b.Len()+len(p) > limit {
			return b.String(), true
		}
		b.Write(p)
		prev = w
		i += n
	}
	return b.String(), false
}

// Plain reports text of printable ASCII, tabs and newlines only, which
// Sanitize and EscapeLines return as is.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || c < 0x20 && c != '\t' && c != '\n' {
			return false
		}
	}
	return true
}

// skipEscape returns the index after the escape sequence that starts at
// s[i] (an ESC), or after what there is of it when s ends first.
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch s[j] {
	case '[': // CSI: parameters and intermediates, then a final byte
		j++
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			j++
		}
		return j
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: a string up to BEL or ST
		for j++; j < len(s); j++ {
			switch {
			case s[j] == 0x07:
				return j + 1
			case s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\':
				return j + 2
			case s[j] == 0x1b:
				return j
			}
		}
		return j
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f { // intermediates, as in ESC ( B
		j++
	}
	if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
		j++
	}
	return j
}
