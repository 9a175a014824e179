package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// occurrences found by brute force: every keyword at every position,
// ASCII case folded.
func bruteForce(keywords []string, t string) [][2]int {
	var out [][2]int
	low := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, t)
	for i := range len(low) {
		for k, kw := range keywords {
			if strings.HasPrefix(low[i:], kw) {
				out = append(out, [2]int{i, k})
			}
		}
	}
	return out
}

func walked(m *keywordMatcher, t string) ([][2]int, bool) {
	var out [][2]int
	ascii := m.walk(t, func(start, k int) { out = append(out, [2]int{start, k}) })
	return out, ascii
}

func sortPairs(p [][2]int) {
	slices.SortFunc(p, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
}

func TestKeywordMatcher(t *testing.T) {
	t.Parallel()
	keywords := []string{"key", "api", "apikey", "he", "she", "hers", "his", "-----begin", "s."}
	m, err := newKeywordMatcher(keywords)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"",
		"ushers",
		"my APIKEY and Api_Key",
		"-----BEGIN RSA PRIVATE KEY-----",
		"hishers sheheshe",
		"keys. s.s.",
		"naïve keÿ KEY",
	} {
		got, ascii := walked(m, text)
		want := bruteForce(keywords, text)
		sortPairs(got)
		if !slices.Equal(got, want) {
			t.Errorf("walk(%q) = %v, want %v", text, got, want)
		}
		if wantASCII := isASCII(text); ascii != wantASCII {
			t.Errorf("walk(%q) reports ASCII %v, want %v", text, ascii, wantASCII)
		}
	}
}

// TestKeywordMatcherRandom compares the matcher with brute force on the
// keywords of the default rules and random texts built from their bytes.
func TestKeywordMatcherRandom(t *testing.T) {
	t.Parallel()
	rs := testRules(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		var b strings.Builder
		for b.Len() < 300 {
			k := rs.keywords[rng.IntN(len(rs.keywords))]
			switch rng.IntN(3) {
			case 0:
				b.WriteString(k)
			case 1:
				b.WriteString(strings.ToUpper(k[:len(k)/2]))
			default:
				b.WriteByte(byte(' ' + rng.IntN(95)))
			}
		}
		text := b.String()
		got, _ := walked(rs.matcher, text)
		sortPairs(got)
		want := bruteForce(rs.keywords, text)
		sortPairs(want)
		if !slices.Equal(got, want) {
			t.Fatalf("walk(%q): %d occurrences, brute force %d", text, len(got), len(want))
		}
	}
}

func TestKeywordMatcherRefusesUpperCase(t *testing.T) {
	t.Parallel()
	if _, err := newKeywordMatcher([]string{"Key"}); err == nil {
		t.Error("an upper-case keyword was accepted")
	}
}
