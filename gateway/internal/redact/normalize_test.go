package redact

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/hints"
)

// fullwidth spells ASCII in its fullwidth forms.
func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// disguises are the spellings of a secret a client still reads as it.
func disguises(secret string) map[string]string {
	var pct strings.Builder
	for i := 0; i < len(secret); i++ {
		pct.WriteString("%" + hexByte(secret[i]))
	}
	half := len(secret) / 2
	return map[string]string{
		"percent-encoded":  pct.String(),
		"partly escaped":   secret[:4] + "%" + hexByte(secret[4]) + secret[5:],
		"zero-width space": secret[:half] + "\u200b" + secret[half:],
		"zero-width joins": strings.Join(strings.Split(secret, ""), "\u200d"),
		"fullwidth":        fullwidth(secret),
	}
}

func hexByte(c byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[c>>4], digits[c&15]})
}

func TestDisguisedSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	ghp := "ghp_" + token(21, alnum, 36)
	for name, spelled := range disguises(ghp) {
		t.Run(name, func(t *testing.T) {
			text := "the token is " + spelled + " (do not share)"
			out, rep := r.Result(textResult(text), hints.SensitivityConfidential)
			got := out.Content[0].(*mcp.TextContent).Text
			if strings.Contains(got, spelled) || rep.Kinds["github-pat"] != 1 {
				t.Fatalf("%q\nredacted to %q, report %+v", text, got, rep)
			}
			if got != "the token is [REDACTED:github-pat] (do not share)" {
				t.Errorf("redacted to %q", got)
			}
		})
	}
}

func TestFoldMapsSpansBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"a%41b", "aAb"},
		{"x\u200by", "xy"},
		{"ｇｈｐ＿", "ghp_"},
		{"a%E2%80%8Bz", "az"},
		{"%EF%BD%87", "g"},
		{"100%", ""},
	} {
		f, ok := fold(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("fold(%q) = %q, want unchanged", tc.in, f.text)
			}
			continue
		}
		if !ok || f.text != tc.want {
			t.Errorf("fold(%q) = %q, %v; want %q", tc.in, f.text, ok, tc.want)
			continue
		}
		if s, e := f.original(0, len(f.text)); s != 0 || e != len(tc.in) {
			t.Errorf("fold(%q): the whole maps to [%d, %d)", tc.in, s, e)
		}
	}
}

// FuzzFold checks that a folded text maps every span back to a span of
// the original, in order, within it, and runes to whole runes.
func FuzzFold(f *testing.F) {
	for _, s := range []string{"", "%", "%4", "%41", "a%zz%41", "ｇｈｐ＿%41\u200d", "\u00ad", "e\u0301", "ﬁ", "%C3%A9", "\xff%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := fold(s)
		if !ok {
			return
		}
		if len(d.from) != len(d.text) || len(d.to) != len(d.text) {
			t.Fatalf("fold(%q): %d bytes, %d/%d spans", s, len(d.text), len(d.from), len(d.to))
		}
		prev := 0
		for i := range d.text {
			from, to := d.from[i], d.to[i]
			if from < prev || from >= to || to > len(s) {
				t.Fatalf("fold(%q): byte %d maps to [%d, %d) after %d", s, i, from, to, prev)
			}
			prev = from
			if !utf8.ValidString(s) || !utf8.ValidString(d.text) {
				continue
			}
			if utf8.RuneStart(d.text[i]) && !utf8.RuneStart(s[from]) {
				t.Fatalf("fold(%q): rune at %d starts at %d, inside a rune", s, i, from)
			}
			if (i+1 == len(d.text) || utf8.RuneStart(d.text[i+1])) && to < len(s) && !utf8.RuneStart(s[to]) {
				t.Fatalf("fold(%q): rune ending at %d ends at %d, inside a rune", s, i, to)
			}
		}
	})
}

func TestSecretSplitAcrossTextBlocks(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	ghp := "ghp_" + token(22, alnum, 36)
	aws := "AKIA" + "LALEMEL33243OLIB"
	for name, blocks := range map[string][]string{
		"two blocks":       {"token: " + ghp[:10], ghp[10:] + " end"},
		"three blocks":     {"token: " + ghp[:3], ghp[3:5], ghp[5:] + " end"},
		"one rune a block": strings.Split("id "+aws+" x", ""),
		"disguised":        {"token: " + fullwidth(ghp[:10]), ghp[10:]},
	} {
		t.Run(name, func(t *testing.T) {
			out, rep := r.Result(textResult(blocks...), hints.SensitivityConfidential)
			var all strings.Builder
			for _, b := range out.Content {
				all.WriteString(b.(*mcp.TextContent).Text)
			}
			got, _ := fold(all.String())
			if got.text == "" {
				got.text = all.String()
			}
			if strings.Contains(got.text, ghp[4:20]) || strings.Contains(got.text, aws[4:]) || !rep.Redacted() {
				t.Fatalf("%q redacted to %q, report %+v", blocks, all.String(), rep)
			}
			if !strings.Contains(all.String(), "[REDACTED:") {
				t.Errorf("no placeholder in %q", all.String())
			}
		})
	}
}

func TestMetaAndAnnotationsAreRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	ghp := "ghp_" + token(23, alnum, 36)
	res := &mcp.CallToolResult{
		Meta: mcp.Meta{"debug": map[string]any{"auth": "token " + ghp}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello", Meta: mcp.Meta{"note": ghp}, Annotations: &mcp.Annotations{LastModified: ghp, Priority: 0.5}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "x", Meta: mcp.Meta{"k": ghp}}},
			&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png", Meta: mcp.Meta{"alt": ghp}},
		},
	}
	before := marshal(t, res)
	out, rep := r.Result(res, hints.SensitivityConfidential)
	got := marshal(t, out)
	if strings.Contains(got, ghp) || rep.Kinds["github-pat"] != 1 {
		t.Fatalf("redacted to %s, report %+v", got, rep)
	}
	if marshal(t, res) != before {
		t.Fatal("the input was modified")
	}
	if a := out.Content[0].(*mcp.TextContent).Annotations; a == nil || a.Priority != 0.5 {
		t.Errorf("annotations lost: %+v", a)
	}
}
