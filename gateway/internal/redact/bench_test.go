package redact

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/hints"
)

// The benchmarks' result is testdata/issue.json, a GitHub issue as the
// REST API returns it (4 KiB), whose body holds an e-mail address, a
// GitHub token and a phone number; "clean" is the same issue without them.
// Commands and figures: docs/benchmarks.md.
//
// Besides ns/op (the wall clock), loop reports cpu-ns/op, the CPU time of
// the benchmark's thread per operation, which other work on a shared
// machine does not inflate.

// loop runs fn b.N times on one OS thread and reports its CPU time.
func loop(b *testing.B, fn func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	for b.Loop() {
		fn()
	}
	if end, ok2 := threadCPU(); ok && ok2 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

func issue(b *testing.B, clean bool) (string, map[string]any) {
	b.Helper()
	data, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	if clean {
		text = strings.NewReplacer("jane.doe@example.com", "the ci-bot owner", "ghp_8f3kK2mZ9qL4xR7tW1vB6nC0yH5jD3sA2eU1", "the bot's token",
			"+44 20 7946 0958", "in the wiki").Replace(text)
	}
	var sc map[string]any
	if err := json.Unmarshal([]byte(text), &sc); err != nil {
		b.Fatal(err)
	}
	return text, sc
}

func BenchmarkResult(b *testing.B) {
	r := newRedactor(b, nil)
	text, sc := issue(b, false)
	cleanText, cleanSC := issue(b, true)
	for _, c := range []struct {
		name  string
		res   *mcp.CallToolResult
		level hints.Sensitivity
	}{
		{"below", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: sc}, hints.SensitivityInternal},
		{"clean-text", textResult(cleanText), hints.SensitivityConfidential},
		{"clean-mirror", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: cleanText}}, StructuredContent: cleanSC}, hints.SensitivityConfidential},
		{"text", textResult(text), hints.SensitivityConfidential},
		{"mirror", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: sc}, hints.SensitivityConfidential},
		{"withheld", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: sc}, hints.SensitivityRestricted},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			loop(b, func() { r.Result(c.res, c.level) })
		})
	}
}

// BenchmarkDetectors runs each detector alone over the issue's text, to
// show where a scan's time goes.
func BenchmarkDetectors(b *testing.B) {
	text, _ := issue(b, false)
	rs := testRules(b)
	b.Run("secrets", func(b *testing.B) {
		loop(b, func() {
			budget := 1 << 30
			rs.scan(text, &budget, func(secretFinding) {})
		})
	})
	b.Run("keywords", func(b *testing.B) {
		loop(b, func() { rs.matcher.walk(text, func(int, int) {}) })
	})
	r := newRedactor(b, &Options{Kinds: []Kind{Email, Phone, PaymentCard, IBAN, USSSN, IPv4}})
	runs := digitRuns(text)
	for _, p := range r.pii {
		b.Run(p.kind, func(b *testing.B) {
			loop(b, func() {
				budget := 1 << 30
				p.scan(text, runs, &budget, func(int, int) {})
			})
		})
	}
	b.Run("digit-runs", func(b *testing.B) {
		loop(b, func() { digitRuns(text) })
	})
}

// BenchmarkGitleaks compares the scanner with gitleaks' own detector on
// the same text.
func BenchmarkGitleaks(b *testing.B) {
	text, _ := issue(b, false)
	rs, d := testRules(b), newGitleaks(b)
	b.Run("scanner", func(b *testing.B) {
		loop(b, func() {
			budget := 1 << 30
			rs.scan(text, &budget, func(secretFinding) {})
		})
	})
	b.Run("detector", func(b *testing.B) {
		loop(b, func() { d.DetectString(text) })
	})
}

// BenchmarkCostly is a text made to cost: 48 KiB of "api_key=<token>"
// assignments, so that the generic rule's windows cover it all and its
// checks are few. The work budget runs out and the result is withheld;
// of the sizes tried, this one takes longest to get there, and it is
// about the longest a result can hold a call with the default options.
func BenchmarkCostly(b *testing.B) {
	r := newRedactor(b, nil)
	line := "api_key=" + token(14, alnum, 40) + " "
	res := textResult(strings.Repeat(line, (48<<10)/len(line)))
	loop(b, func() {
		if _, rep := r.Result(res, hints.SensitivityConfidential); !rep.Withheld {
			b.Fatal("not withheld")
		}
	})
}

// BenchmarkLoadRules compiles gitleaks' default rules, as the first New of
// a process does.
func BenchmarkLoadRules(b *testing.B) {
	loop(b, func() {
		if _, err := loadSecretRules(); err != nil {
			b.Fatal(err)
		}
	})
}
