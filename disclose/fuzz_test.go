package disclose_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/disclose"
)

// FuzzParseSelection: the query of a tool_descriptions read is untrusted
// input. Parsing never panics, a selection has unique, trimmed, non-empty
// names within the bound, and what SelectionURI writes parses back to the
// same names.
func FuzzParseSelection(f *testing.F) {
	base := disclose.DefaultURI
	for _, s := range []string{
		"", "?tools=a", "?tools=a,b,c", "?tools=a&tools=b", "?tools=", "?tools=%zz", "?tools=a%2Cb",
		"?tools=+a+,b", "?x=1&tools=a#frag", "#frag", "?tools=a,,a", "/other", "?tools=" + strings.Repeat("x", 300),
		"?%74ools=a", "?tools=%E2%9C%93", "?tools=a;b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		tools, ours, err := disclose.ParseSelection(base, base+rest, 8)
		if !ours {
			if err != nil || tools != nil {
				t.Fatalf("not ours, but %v %v", tools, err)
			}
			return
		}
		if err != nil {
			if tools != nil {
				t.Fatalf("error %v with tools %v", err, tools)
			}
			return
		}
		if len(tools) == 0 || len(tools) > 8 {
			t.Fatalf("%d tools", len(tools))
		}
		seen := map[string]bool{}
		for _, n := range tools {
			if n == "" || n != strings.TrimSpace(n) || seen[n] {
				t.Fatalf("bad name %q in %q", n, tools)
			}
			seen[n] = true
		}
		again, ours, err := disclose.ParseSelection(base, disclose.SelectionURI(base, tools...), 8)
		if !ours || err != nil || !slices.Equal(again, tools) {
			t.Fatalf("round trip of %q: %q %v %v", tools, again, ours, err)
		}
	})
}

// FuzzDecodeDetails: a descriptions file is decoded without panicking, and
// what decodes is accepted by Full.
func FuzzDecodeDetails(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"name":"echo"}`, `{"name":"other"}`, `{"examples":[{"input":{"a":1}}]}`,
		`{"inputSchema":{"type":"object"}}`, `{"inputSchema":[1]}`, `{"usage_guidance":"x","error_guidance":{"E":"y"}}`,
		`{} {}`, `{"unknown":1}`, `null`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := disclose.DecodeDetails("echo", b)
		if err != nil {
			return
		}
		if d.Name != "" && d.Name != "echo" {
			t.Fatalf("name %q accepted", d.Name)
		}
		_ = disclose.Full(newEchoTool(), d)
	})
}

// FuzzShortDescription: any description gives a short one that is not
// empty, within the bound, and valid UTF-8 when the input is.
func FuzzShortDescription(f *testing.F) {
	for _, s := range []string{"", "Read a file.", "a\n\n- b", "查询。", "e.g. x. y", strings.Repeat("word ", 60), "# T\n", "..."} {
		f.Add(s, "", "name_x")
	}
	f.Fuzz(func(t *testing.T, desc, title, name string) {
		got := disclose.ShortDescription(desc, title, name)
		if strings.TrimSpace(got) == "" {
			t.Fatalf("empty short description for %q %q %q", desc, title, name)
		}
		if utf8.RuneCountInString(got) > disclose.ShortDescriptionLimit {
			t.Fatalf("%d runes", utf8.RuneCountInString(got))
		}
		if utf8.ValidString(desc) && utf8.ValidString(title) && utf8.ValidString(name) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
	})
}
