package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Error is one problem in a config file: where it is and what is wrong,
// with what is allowed.
type Error struct {
	File   string
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Path   string // the key, such as servers.github.type; empty for the whole file
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors are the problems found in one file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each [*Error], for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// maxErrors bounds the problems reported for one file.
const maxErrors = 20

// errList collects the problems of one file.
type errList struct {
	file  string
	errs  Errors
	cut   bool              // problems were left out
	where func(off int) pos // the line and column of a JSON offset
}

func (l *errList) add(at pos, path, format string, args ...any) {
	if len(l.errs) >= maxErrors {
		l.cut = true
		return
	}
	at = l.resolve(at)
	l.errs = append(l.errs, &Error{File: l.file, Line: at.line, Column: at.col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// resolve returns at with its line and column.
func (l *errList) resolve(at pos) pos {
	if at.line == 0 && at.off > 0 && l.where != nil {
		return l.where(at.off - 1)
	}
	return at
}

// full reports whether no more problems are kept; reading stops then.
func (l *errList) full() bool {
	if len(l.errs) >= maxErrors {
		l.cut = true
		return true
	}
	return false
}

// err returns the problems sorted by position, or nil.
func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs, func(a, b *Error) int {
		// Problems without a position go last.
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if l.cut {
		l.errs = append(l.errs, &Error{File: l.file, Msg: fmt.Sprintf("stopped after %d problems; there may be more", maxErrors)})
	}
	return l.errs
}

// maxQuoted bounds how much of a value or key an error repeats.
const maxQuoted = 64

// quote returns s quoted for an error message: control characters
// escaped and long text cut.
func quote(s string) string {
	return strconv.Quote(text.Clip(s, maxQuoted))
}

// printable returns s cut, with control characters escaped, for text
// inside a message.
func printable(s string) string {
	q := quote(s)
	return q[1 : len(q)-1]
}

// segment renders one key of a path: as is when it is a plain word,
// quoted otherwise.
func segment(key string) string {
	if key != "" && !strings.ContainsFunc(key, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '/' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) && len(key) <= maxQuoted {
		return key
	}
	return quote(key)
}

func join(path, key string) string {
	if path == "" {
		return segment(key)
	}
	return path + "." + segment(key)
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// list renders allowed values for a message.
func list(words []string) string { return strings.Join(words, ", ") }
