package page

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// funcs are the templates' functions. None returns template.HTML: every
// value is escaped where it is written.
func funcs() template.FuncMap {
	return template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		// segment escapes a name for one segment of a path ("/", "?" and
		// "#" included).
		"segment": url.PathEscape,
		"stamp":   stamp,
		"ago":     func(t time.Time) string { return relative(time.Since(t)) },
		"until": func(t time.Time) string {
			d := time.Until(t)
			if d <= 0 {
				return "lapsed"
			}
			return "in " + strings.TrimSuffix(relative(d), " ago")
		},
		"short": func(s string) string {
			if len(s) > 12 {
				return s[:12]
			}
			return s
		},
		"f1": func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"ms": func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
		"effectClass": func(e any) string {
			switch s := fmt.Sprint(e); s {
			case "read", "write", "external", "delete":
				return "e-" + s
			}
			return "e-unknown"
		},
		"riskClass": func(r string) string {
			switch r {
			case "read-only", "write", "destructive":
				return "risk-" + r
			}
			return ""
		},
		"toneClass": func(t string) string {
			switch t {
			case "good", "warn", "bad":
				return "tone-" + t
			}
			return ""
		},
		"principal": func(p string) string {
			if p == "" {
				return "(anonymous)"
			}
			return p
		},
		"join":     strings.Join,
		"clipText": text.Clip,
		// visible shows every control and format character of a peer's
		// text (bidirectional, zero-width) as an escape.
		"visible": text.EscapeLines,
		// withView and decideArgs pass what the request and decide
		// templates need beside their item.
		"withView": func(v view, r *approval.Request) reqArgs { return reqArgs{Prefix: v.Prefix, Request: r} },
		"decideArgs": func(v view, id string) decideArgs {
			return decideArgs{Prefix: v.Prefix, CSRF: v.CSRF, ID: id}
		},
		"requestReason": requestReason,
		"withholds":     withholds,
		"recordReason":  recordReason,
		"foldArgs":      func(b json.RawMessage) foldView { return fold(b, argsShown) },
		"foldError":     func(s string) foldView { return fold(s, errorShown) },
		"sub":           func(a, b float64) float64 { return a - b },
		"add":           func(a, b float64) float64 { return a + b },
	}
}

// withholds reports whether any argument's value, or part of it, is
// withheld.
func withholds(args []approval.Arg) bool {
	for _, a := range args {
		if a.Withheld || len(a.Secrets) > 0 {
			return true
		}
	}
	return false
}

type reqArgs struct {
	Prefix string
	*approval.Request
}

type decideArgs struct{ Prefix, CSRF, ID string }

// stamp writes t compactly, on one line, in UTC: "Nov 28 20:08:38", with
// the year when it is not this year's.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	if t.Year() != time.Now().UTC().Year() {
		return t.Format("Jan 2 2006 15:04")
	}
	return t.Format("Jan 2 15:04:05")
}

// Bounds of the text an audit row shows before the rest is folded away
// (the whole text opens below it).
const (
	argsShown  = 480
	errorShown = 200
)

// foldView is a long text as an audit row shows it: Head always, and All
// behind a disclosure when Head is cut.
type foldView struct {
	Head  string
	All   string
	Bytes int
}

// fold cuts a text (a string or bytes) after n bytes for an audit row,
// control, format and separator characters but tab and newline escaped
// ([text.EscapeLines]).
func fold(value any, n int) foldView {
	var s string
	switch t := value.(type) {
	case string:
		s = t
	case []byte:
		s = string(t)
	case json.RawMessage:
		s = string(t)
	default:
		s = fmt.Sprint(t)
	}
	v := foldView{Head: text.EscapeLines(s), Bytes: len(s)}
	if len(v.Head) > n {
		v.Head, v.All = text.Clip(v.Head, n), v.Head
	}
	return v
}

// relative says how long d is, roughly, as "3m ago".
func relative(d time.Duration) string {
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
