package text_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"日本語", 4, "日…"}, // 日 is 3 bytes: the cut backs off to a rune start
		{"日本語", 2, "…"},
		{"x", 0, "…"},
		{"", 0, ""},
	} {
		if got := text.Clip(tc.in, tc.max); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc"},
		{"日本語", 4, "日"},
		{"日本語", 2, ""},
		{"x", -1, ""},
	} {
		if got := text.Cut(tc.in, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestClipRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 5, "short"},
		{"abcdef", 3, "abc…"},
		{"日本語テキスト", 3, "日本語…"},
		{"日本語", 3, "日本語"},
		{"a\xffb\xfec", 3, "a\xffb…"}, // an invalid byte counts as one
		{"x", 0, "…"},
		{"x", -1, "…"},
		{"", 0, ""},
	} {
		if got := text.ClipRunes(tc.in, tc.max); got != tc.want {
			t.Errorf("ClipRunes(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("日本語テキスト", 5)
	f.Add("plain", 2)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := text.Clip(s, max)
		if len(s) <= max {
			if got != s {
				t.Fatalf("Clip(%q, %d) = %q, changed a text within the bound", s, max, got)
			}
			return
		}
		head := strings.TrimSuffix(got, text.Ellipsis)
		if len(head) > max || !strings.HasPrefix(s, head) {
			t.Fatalf("Clip(%q, %d) = %q", s, max, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q cut a rune", s, max, got)
		}
	})
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain text\twith a tab\n", "plain text\twith a tab\n"},
		{"red \x1b[31mALERT\x1b[0m", "red ALERT"},
		{"up\x1b[1A\x1b[2Kover", "upover"},
		{"title \x1b]0;pwned\x07set", "title set"},
		{"title \x1b]0;pwned\x1b\\set", "title set"},
		{"osc st \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "osc st link"},
		{"dcs \x1bPq#0;2;0;0;0\x1b\\done", "dcs done"},
		{"charset \x1b(Bok", "charset ok"},
		{"cut \x1b[", "cut "},
		{"csi \x1b[1;2", "csi "},
		{"lone \x1b", "lone "},
		{"ok\rDANGER", "ok DANGER"},
		{"crlf\r\nline", "crlf\nline"},
		{"bell\x07 del\x7f nul\x00 c1\u009b31m", "bell del nul c131m"},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200fy\u061c", "bidi evil x y"},
		{"sep\u2028para\u2029end", "sep para end"},
		{"bom\ufeff", "bom"},
		{"ad\u200bmin soft\u00adhyphen", "admin softhyphen"},
		{"tags \U000e0069\U000e0067\U000e006eend", "tags end"},
		{"joiner 👨\u200d👩", "joiner 👨👩"},
		{"smuggled a\ufe00\ufe0f\U000e0100b", "smuggled ab"},
		{"emoji ⚠\ufe0f 1\ufe0f\u20e3 ✔\ufe0e\ufe0f", "emoji ⚠\ufe0f 1\ufe0f\u20e3 ✔\ufe0e"},
		{"fillers \u115f\u1160\u3164\uffa0x \u034fy", "fillers x y"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"ünïcödé 日本 ✓", "ünïcödé 日本 ✓"},
	} {
		if got := text.Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := text.OneLine("a\x1b[2K\n\tb\r\nc "); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}

// FuzzSanitize: the output is valid UTF-8 with no control character but
// tab and newline, no format character and no line separator; it is
// a fixed point; it grows at most threefold (a byte of invalid UTF-8
// becomes U+FFFD).
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "\x1b]0;x\x07", "\r\n", "\u202e", "\xff\xfe", "\x1bP\x1b\\", "\x1b(", "\u009b", "a\ufe00\ufe0f", "⚠\ufe0f\ufe0f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := text.Sanitize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", s, got)
		}
		prev := rune(-1)
		for _, r := range got {
			if r != '\t' && r != '\n' && visibleNot(prev, r) {
				t.Fatalf("Sanitize(%q) = %q keeps %U", s, got, r)
			}
			prev = r
		}
		if again := text.Sanitize(got); again != got {
			t.Fatalf("Sanitize is not idempotent on %q: %q, then %q", s, got, again)
		}
		if len(got) > 3*len(s) {
			t.Fatalf("grew from %d to %d bytes", len(s), len(got))
		}
	})
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, one, lines string }{
		{"plain text", "plain text", "plain text"},
		{"a\tb\nc", `a\u0009b\u000ac`, "a\tb\nc"},
		{"red \x1b[31mALERT", `red \u001b[31mALERT`, `red \u001b[31mALERT`},
		{"cr\r del\x7f c1\u0085", `cr\u000d del\u007f c1\u0085`, `cr\u000d del\u007f c1\u0085`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"ad\u200bmin\ufeff", `ad\u200bmin\ufeff`, `ad\u200bmin\ufeff`},
		{"tag\U000e0041", `tag\U000e0041`, `tag\U000e0041`},
		{"vs a\ufe0f\U000e0101 h\u3164", "vs a\ufe0f" + `\U000e0101 h\u3164`, "vs a\ufe0f" + `\U000e0101 h\u3164`},
		{"warn ⚠\ufe0f 1\ufe0f\u20e3", "warn ⚠\ufe0f 1\ufe0f\u20e3", "warn ⚠\ufe0f 1\ufe0f\u20e3"},
		{"run ⚠\ufe0f\ufe0f\ufe0e \ufe0f", "run ⚠\ufe0f" + `\ufe0f\ufe0e \ufe0f`, "run ⚠\ufe0f" + `\ufe0f\ufe0e \ufe0f`},
		{"sep\u2028", `sep\u2028`, `sep\u2028`},
		{"bad \xff\xfe", `bad \xff\xfe`, `bad \xff\xfe`},
		{"ünïcödé 日本 ✓ \ufffd", "ünïcödé 日本 ✓ \ufffd", "ünïcödé 日本 ✓ \ufffd"},
	} {
		if got := text.Escape(tc.in); got != tc.one {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.one)
		}
		if got := text.EscapeLines(tc.in); got != tc.lines {
			t.Errorf("EscapeLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}

// FuzzEscape: the output is valid UTF-8 with no invisible character (but
// tab and newline from EscapeLines), and everything visible in the input
// is still there, in order.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "\r\n\t", "\u202e", "\xff\xfe", "\u200b\U000e0041", "\u009b", "\ufe0f", "⚠\ufe0f\ufe0f", "\u3164\ufe0e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lines := range []bool{false, true} {
			got := text.Escape(s)
			if lines {
				got = text.EscapeLines(s)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("escape(%q, %v) = %q: invalid UTF-8", s, lines, got)
			}
			prev := rune(-1)
			for _, r := range got {
				if visibleNot(prev, r) && !(lines && (r == '\t' || r == '\n')) {
					t.Fatalf("escape(%q, %v) = %q keeps %U", s, lines, got, r)
				}
				prev = r
			}
			rest := got
			for _, r := range strings.ToValidUTF8(s, "") {
				if visibleNot(-1, r) || r == '\ufe0e' || r == '\ufe0f' {
					continue // hidden, escaped or kept
				}
				i := strings.IndexRune(rest, r)
				if i < 0 {
					t.Fatalf("escape(%q, %v) = %q lost %q", s, lines, got, r)
				}
				rest = rest[i+utf8.RuneLen(r):]
			}
		}
	})
}

// visibleNot reports what no text shown to a person may hold as it is
// after prev, written out from the Unicode categories and properties (not
// text.Invisible): controls, format characters, separators, variation
// selectors and the other default-ignorable characters, but for one
// presentation selector (U+FE0E, U+FE0F) right after a drawn rune.
func visibleNot(prev, r rune) bool {
	if (r == '\ufe0e' || r == '\ufe0f') && prev > ' ' && !unicode.IsSpace(prev) && !unicode.Is(unicode.Mn, prev) && !visibleNot(-1, prev) {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// BenchmarkSanitize measures the sanitizer every line of the command's text
// output passes through: plain ASCII (the fast path) and a line full of
// escape sequences.
//
//	go test -run '^$' -bench Sanitize ./gateway/internal/text/
func BenchmarkSanitize(b *testing.B) {
	plain := "manage_files  -- d - --  effect=delete  yes  no  Read, append, replace, or delete\n"
	hostile := strings.Repeat("\x1b[2J\x1b[H\x1b]0;owned\x07\u202eevil\u202c \r", 8) + "\n"
	for name, line := range map[string]string{"plain": plain, "hostile": hostile} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				_ = text.Sanitize(line)
			}
		})
	}
}

func TestEscapeCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"plain", 10, "plain", false},
		{"plain", 3, "pla", true},
		{"ab\u200bcd", 8, `ab\u200b`, true},
		{"ab\u200bcd", 5, "ab", true}, // not `ab\u2`
		{"ab\u200bcd", 9, `ab\u200bc`, true},
		{"日本", 4, "日", true},
		{"bad\xffx", 6, "bad", true},
		{"bad\xffx", 7, `bad\xff`, true},
		{"⚠\ufe0f!", 6, "⚠\ufe0f", true},
		{"x", -1, "", true},
	} {
		got, cut := text.EscapeCut(tc.in, tc.limit)
		if got != tc.want || cut != tc.cut {
			t.Errorf("EscapeCut(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, cut, tc.want, tc.cut)
		}
		if whole := text.Escape(tc.in); !strings.HasPrefix(whole, got) {
			t.Errorf("EscapeCut(%q, %d) = %q is not a prefix of Escape's %q", tc.in, tc.limit, got, whole)
		}
	}
}
