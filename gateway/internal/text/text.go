// Package text bounds and cleans text that came from a peer (a client, an
// upstream, a web page) before the gateway quotes it: in an error, a log
// line, a record or on a terminal.
package text

import (
	"strings"
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

// Sanitize returns s safe to print on a terminal: escape sequences (CSI,
// OSC, DCS and the other ESC sequences) are removed whole; carriage
// returns (but one before a newline, which goes), vertical tabs, form
// feeds and the Unicode line and paragraph separators become spaces; every
// other control character (C0 but tab and newline, DEL, C1), the Unicode
// bidirectional controls and the byte order mark are removed; invalid
// UTF-8 becomes U+FFFD. Text a peer put in a name, a description, a result
// or an error cannot then move the cursor, clear a line, recolour or
// reorder what is printed.
func Sanitize(s string) string {
	if Plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i = skipEscape(s, i)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
		case r == '\r', r == '\v', r == '\f', r == '\u2028', r == '\u2029':
			b.WriteByte(' ')
		case r == '\t', r == '\n':
			b.WriteRune(r)
		case r < 0x20, r >= 0x7f && r < 0xa0, IsBidiControl(r), r == '\ufeff':
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// OneLine is [Sanitize] with every run of white space (newlines and tabs
// included) folded into one space and the ends trimmed: for a table cell
// or a log field.
func OneLine(s string) string {
	return strings.Join(strings.Fields(Sanitize(s)), " ")
}

// IsBidiControl reports a Unicode bidirectional control, which can reorder
// how a terminal or a page shows the text around it.
func IsBidiControl(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f',
		r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// Plain reports text of printable ASCII, tabs and newlines only, which
// Sanitize returns as is.
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
