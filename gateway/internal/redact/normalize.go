package redact

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// disguise is a text as the detectors read a disguised spelling of it:
// percent-escapes decoded, zero-width characters removed, and NFKC
// applied (fullwidth "ｇｈｐ＿" reads "ghp_"). from and to give, for each
// byte of text, the span of the original it stands for.
type disguise struct {
	text     string
	from, to []int
}

// original returns the span of the original text that [s, e) of f stands
// for.
func (f disguise) original(s, e int) (int, int) {
	if e <= s {
		return f.from[s], f.from[s]
	}
	return f.from[s], f.to[e-1]
}

// fold returns t as the detectors should also read it, and false when
// that is t itself.
func fold(t string) (disguise, bool) {
	if !disguised(t) {
		return disguise{}, false
	}
	f := identity(t)
	f = f.then(percentDecode)
	f = f.then(dropZeroWidth)
	f = f.then(nfkc)
	if f.text == t {
		return disguise{}, false
	}
	return f, true
}

// disguised reports whether t holds something fold would change: a
// percent sign, or any non-ASCII rune.
func disguised(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c == '%' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func identity(t string) disguise {
	f := disguise{text: t, from: make([]int, len(t)), to: make([]int, len(t))}
	for i := 0; i < len(t); i++ {
		f.from[i], f.to[i] = i, i+1
	}
	return f
}

// step rewrites a text as a sequence of pieces: for each, the bytes it
// writes and the span [s, e) of its input they stand for.
type step func(t string, emit func(out string, s, e int))

// then applies st to f's text, composing the spans.
func (f disguise) then(st step) disguise {
	var b strings.Builder
	b.Grow(len(f.text))
	from, to := make([]int, 0, len(f.text)), make([]int, 0, len(f.text))
	st(f.text, func(out string, s, e int) {
		b.WriteString(out)
		for range len(out) {
			from = append(from, f.from[s])
			to = append(to, f.to[e-1])
		}
	})
	return disguise{text: b.String(), from: from, to: to}
}

// percentDecode decodes %XX escapes, byte by byte.
func percentDecode(t string, emit func(string, int, int)) {
	start := 0
	for i := 0; i < len(t); {
		if t[i] == '%' && i+2 < len(t) && isHex(t[i+1]) && isHex(t[i+2]) {
			copyBytes(t, start, i, emit)
			emit(string([]byte{unhex(t[i+1])<<4 | unhex(t[i+2])}), i, i+3)
			i += 3
			start = i
			continue
		}
		i++
	}
	copyBytes(t, start, len(t), emit)
}

// copyBytes emits t[s:e] byte for byte.
func copyBytes(t string, s, e int, emit func(string, int, int)) {
	for i := s; i < e; i++ {
		emit(t[i:i+1], i, i+1)
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// zeroWidth reports the invisible runes that can sit inside a token
// without showing: zero-width space, joiners, word joiner, BOM, soft
// hyphen, Mongolian vowel separator.
func zeroWidth(r rune) bool {
	switch r {
	case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e':
		return true
	}
	return false
}

// dropZeroWidth removes the zero-width runes.
func dropZeroWidth(t string, emit func(string, int, int)) {
	for i := 0; i < len(t); {
		r, n := utf8.DecodeRuneInString(t[i:])
		if !zeroWidth(r) || r == utf8.RuneError {
			copyBytes(t, i, i+n, emit)
		}
		i += n
	}
}

// nfkc applies Unicode's compatibility composition, segment by segment,
// so that each output byte maps to the segment it came from.
func nfkc(t string, emit func(string, int, int)) {
	if norm.NFKC.IsNormalString(t) {
		copyBytes(t, 0, len(t), emit)
		return
	}
	for i := 0; i < len(t); {
		n := norm.NFKC.NextBoundaryInString(t[i:], true)
		if n <= 0 {
			n = len(t) - i
		}
		seg := t[i : i+n]
		if out := norm.NFKC.String(seg); out == seg {
			copyBytes(t, i, i+n, emit)
		} else if out != "" {
			emit(out, i, i+n)
		}
		i += n
	}
}
