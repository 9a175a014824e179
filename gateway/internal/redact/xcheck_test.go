package redact

import (
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zricethezav/gitleaks/v8/detect"
)

// The scanner runs gitleaks' rules only in windows around their keywords.
// These tests check it against gitleaks' own detector, which runs every
// selected rule over the whole text: every secret gitleaks reports must be
// reported too.

// gitleaksSecrets returns what gitleaks' detector reports for text, as
// "rule: secret" strings.
func gitleaksSecrets(t testing.TB, d *detect.Detector, text string) []string {
	t.Helper()
	var out []string
	for _, f := range d.DetectString(text) {
		out = append(out, f.RuleID+": "+f.Secret)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func ourSecrets(t testing.TB, rs *ruleSet, text string) []string {
	t.Helper()
	var out []string
	budget := 1 << 30
	if !rs.scan(text, &budget, func(f secretFinding) {
		out = append(out, f.rule+": "+text[f.start:f.end])
	}) {
		t.Fatalf("the budget ran out on %q", text)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func newGitleaks(t testing.TB) *detect.Detector {
	t.Helper()
	cfg, err := defaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	d := detect.NewDetector(cfg)
	d.IgnoreGitleaksAllow = true
	return d
}

func testRules(t testing.TB) *ruleSet {
	t.Helper()
	rs, err := secretRules()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// missing returns the elements of want that got lacks.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// TestScanFindsWhatGitleaksFinds generates strings from every rule's
// expression, puts them in the contexts results have (an assignment, JSON,
// prose, a multi-line log), and compares both scanners.
func TestScanFindsWhatGitleaksFinds(t *testing.T) {
	t.Parallel()
	rs, d := testRules(t), newGitleaks(t)
	rng := rand.New(rand.NewPCG(1, 2))
	contexts := []string{
		"%s",
		"config:\n  token = %q\n",
		`{"id": 7, "value": "%s", "note": "rotated"}`,
		"The deploy used %s yesterday; see the log.",
		"line one\nkey: %s\nline three with secret words\n",
	}
	found, extra := 0, 0
	for _, r := range rs.rules {
		parsed, err := syntax.Parse(r.re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 12; i++ {
			sample := generate(rng, parsed)
			for _, c := range contexts {
				text := fmt.Sprintf(c, sample)
				want, got := gitleaksSecrets(t, d, text), ourSecrets(t, rs, text)
				if m := missing(want, got); len(m) > 0 {
					t.Errorf("rule %s, text %q: gitleaks found %q, the scanner did not (it found %q)", r.id, text, m, got)
				}
				found += len(want)
				for _, x := range missing(got, want) {
					extra++
					if !explained(x, want) {
						t.Errorf("rule %s, text %q: the scanner found %q, gitleaks did not (it found %q)", r.id, text, x, want)
					}
				}
			}
		}
	}
	if found < 1000 {
		t.Errorf("gitleaks found only %d secrets in the samples: the generator is broken", found)
	}
	t.Logf("%d findings of gitleaks all found; %d more found by the scanner alone, each explained", found, extra)
}

// explained reports whether a finding of the scanner that gitleaks lacks
// is a generic one inside a specific rule's secret, which gitleaks' detector
// drops and the redactor drops later (dropCovered).
func explained(finding string, gitleaks []string) bool {
	id, secret, _ := strings.Cut(finding, ": ")
	if !strings.HasPrefix(id, "generic") {
		return false
	}
	for _, g := range gitleaks {
		gid, gsecret, _ := strings.Cut(g, ": ")
		if !strings.HasPrefix(gid, "generic") && strings.Contains(gsecret, secret) {
			return true
		}
	}
	return false
}

// generate returns a random string that re matches, except for empty-width
// assertions, which it ignores.
func generate(rng *rand.Rand, re *syntax.Regexp) string {
	var b strings.Builder
	gen(rng, re, &b)
	return b.String()
}

func gen(rng *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && rng.IntN(2) == 0 {
				r = flipCase(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(pick(rng, re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(byte('a' + rng.IntN(26)))
	case syntax.OpCapture:
		gen(rng, re.Sub[0], b)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			gen(rng, s, b)
		}
	case syntax.OpAlternate:
		gen(rng, re.Sub[rng.IntN(len(re.Sub))], b)
	case syntax.OpQuest:
		if rng.IntN(2) == 0 {
			gen(rng, re.Sub[0], b)
		}
	case syntax.OpStar, syntax.OpPlus:
		n := rng.IntN(8)
		if re.Op == syntax.OpPlus {
			n++
		}
		for range n {
			gen(rng, re.Sub[0], b)
		}
	case syntax.OpRepeat:
		hi := re.Max
		if hi < 0 {
			hi = re.Min + 8
		}
		for range re.Min + rng.IntN(hi-re.Min+1) {
			gen(rng, re.Sub[0], b)
		}
	}
}

// pick returns a rune of a class, mostly printable ASCII.
func pick(rng *rand.Rand, ranges []rune) rune {
	var ascii []rune
	for i := 0; i < len(ranges); i += 2 {
		for r := max(ranges[i], ' '); r <= min(ranges[i+1], '~'); r++ {
			ascii = append(ascii, r)
		}
	}
	if len(ascii) > 0 && rng.IntN(20) > 0 {
		return ascii[rng.IntN(len(ascii))]
	}
	i := 2 * rng.IntN(len(ranges)/2)
	lo, hi := ranges[i], min(ranges[i+1], lo16(ranges[i]))
	r := lo + rune(rng.IntN(int(hi-lo)+1))
	if !utf8.ValidRune(r) {
		return 'x'
	}
	return r
}

func lo16(r rune) rune { return r + 0xFFFF }

func flipCase(r rune) rune {
	switch {
	case 'a' <= r && r <= 'z':
		return r - 'a' + 'A'
	case 'A' <= r && r <= 'Z':
		return r - 'A' + 'a'
	}
	return r
}

// FuzzScanFindsWhatGitleaksFinds is the same comparison on texts the
// fuzzer makes from rule samples.
func FuzzScanFindsWhatGitleaksFinds(f *testing.F) {
	rs, d := testRules(f), newGitleaks(f)
	rng := rand.New(rand.NewPCG(5, 6))
	for i, r := range rs.rules {
		if i%7 != 0 {
			continue
		}
		parsed, err := syntax.Parse(r.re.String(), syntax.Perl)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("key = " + generate(rng, parsed) + "\n" + generate(rng, parsed))
	}
	f.Fuzz(func(t *testing.T, text string) {
		want, got := gitleaksSecrets(t, d, text), ourSecrets(t, rs, text)
		for _, m := range missing(want, got) {
			t.Errorf("text %q: gitleaks found %q, the scanner did not (it found %q)", text, m, got)
		}
		for _, x := range missing(got, want) {
			if !explained(x, want) {
				t.Errorf("text %q: the scanner found %q, gitleaks did not (it found %q)", text, x, want)
			}
		}
	})
}
