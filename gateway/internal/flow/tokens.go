package flow

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Token lengths, in characters.
const (
	// MinMixed is the shortest candidate that mixes letters and digits.
	MinMixed = 12
	// MinLong is the shortest candidate of any other kind that has three
	// of lower case, upper case, digits and other characters.
	MinLong = 16
	// MaxToken is the longest candidate; a longer run is cut into pieces
	// of this length, so that no value escapes by its length.
	MaxToken = 512
)

// separator reports the characters a text is split on: white space,
// quotes, and the punctuation that separates names from values in
// ".env" files, URLs, JSON, SQL and code. Characters that occur inside
// keys and tokens (- _ . / + ~ and letters of any script) are kept.
func separator(r rune) bool {
	switch r {
	case '"', '\'', '`', '=', ':', ',', ';', '(', ')', '[', ']', '{', '}', '<', '>', '?', '&', '|', '\\', '!', '*', '#', '$', '%', '^', '@':
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r)
}

// Tokens calls emit with every candidate value in text: each run of
// characters between separators that is at least MinMixed characters
// long with both letters and digits, or at least MinLong characters long
// with three of lower case, upper case, digits and other characters.
// Words, identifiers and paths of letters alone are no candidates; keys
// like "ghp_Xa2bC3dEf4gH5iJk6Lm7nN8oP", "AKIA5MZXN8QRF3WBY6OE" and
// "sk_live_4eC7aRm9Kx2bNw5pQj8sYd" are, in ".env" lines, JSON or SQL.
func Tokens(text string, emit func(string)) {
	for len(text) > 0 {
		i := strings.IndexFunc(text, func(r rune) bool { return !separator(r) })
		if i < 0 {
			return
		}
		text = text[i:]
		j := strings.IndexFunc(text, separator)
		if j < 0 {
			j = len(text)
		}
		run := text[:j]
		text = text[j:]
		for len(run) > 0 {
			piece := run
			if utf8.RuneCountInString(piece) > MaxToken {
				piece = cutRunes(run, MaxToken)
			}
			run = run[len(piece):]
			if Candidate(piece) {
				emit(piece)
			}
		}
	}
}

// Candidate reports whether a run of non-separators is a candidate value
// (see [Tokens]).
func Candidate(s string) bool {
	n := utf8.RuneCountInString(s)
	if n < MinMixed {
		return false
	}
	var lower, upper, digit, other bool
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsLetter(r):
			lower = true // a letter without case
		default:
			other = true
		}
	}
	if (lower || upper) && digit {
		return true
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit, other} {
		if b {
			classes++
		}
	}
	return n >= MinLong && classes >= 3
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
