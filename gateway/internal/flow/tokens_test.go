package flow_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/flow"
)

const (
	githubPAT = "ghp_Xa2bC3dEf4gH5iJk6Lm7nN8oP"
	awsKey    = "AKIA5MZXN8QRF3WBY6OE"
	stripeKey = "sk_live_4eC7aRm9Kx2bNw5pQj8sYd"
)

func tokens(text string) []string {
	var out []string
	flow.Tokens(text, func(s string) { out = append(out, s) })
	return out
}

// TestTokens: the keys are candidates wherever they are written (a .env
// file, JSON, SQL, a URL, a header), and ordinary words, identifiers and
// numbers are not.
func TestTokens(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"DEBUG=1\nGITHUB_TOKEN=" + githubPAT + "\nAWS_ACCESS_KEY_ID=" + awsKey + "\nSTRIPE_KEY=\"" + stripeKey + "\"\n",
		`INSERT INTO notes(body) VALUES ('` + githubPAT + `'), ('` + awsKey + `'); -- ` + stripeKey,
		`{"token":"` + githubPAT + `","aws":["` + awsKey + `"],"stripe":{"k":"` + stripeKey + `"}}`,
		"https://api.example.com/v1?key=" + githubPAT + "&id=" + awsKey + "#" + stripeKey,
		"Authorization: Bearer " + githubPAT + "\t(" + awsKey + ") <" + stripeKey + ">",
	} {
		got := tokens(text)
		for _, want := range []string{githubPAT, awsKey, stripeKey} {
			if !slices.Contains(got, want) {
				t.Errorf("%q: %s not among %q", text, want, got)
			}
		}
	}
	prose := "The gateway internationalization configuration is straightforward; GetUserByIdentifier returns 12345678901234 records, see /usr/share/documentation. DEBUG=1 true"
	if got := tokens(prose); len(got) > 0 {
		t.Errorf("ordinary words gave candidates: %q", got)
	}
	if got := tokens("user42 and abcdefghij9"); len(got) > 0 {
		t.Errorf("short mixed words gave candidates: %q", got)
	}
	long := strings.Repeat("a1", flow.MaxToken)
	if got := tokens(long); len(got) != 2 || got[0]+got[1] != long {
		t.Errorf("a long run: %d pieces", len(got))
	}
}

// FuzzTokens: every candidate is a piece of the text, between
// MinMixed and MaxToken characters, holds no separator, and is found
// again in the text it came from and in itself.
func FuzzTokens(f *testing.F) {
	f.Add("GITHUB_TOKEN=" + githubPAT)
	f.Add(`VALUES ('` + awsKey + `')`)
	f.Add(stripeKey + "é€" + strings.Repeat("x9", 300))
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range tokens(text) {
			if !strings.Contains(text, tok) {
				t.Fatalf("%q is not in the text", tok)
			}
			if n := utf8.RuneCountInString(tok); n < flow.MinMixed || n > flow.MaxToken {
				t.Fatalf("%q: %d characters", tok, n)
			}
			if !flow.Candidate(tok) {
				t.Fatalf("%q is not a candidate", tok)
			}
			if again := tokens(tok); utf8.ValidString(tok) && (len(again) != 1 || again[0] != tok) {
				t.Fatalf("%q tokenised alone gives %q", tok, again)
			}
		}
	})
}
