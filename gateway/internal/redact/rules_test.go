package redact

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// defaultConfig reads gitleaks' default configuration as gitleaks does,
// with a viper of its own (gitleaks' NewDetectorDefaultConfig uses viper's
// global instance).
func defaultConfig() (config.Config, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return config.Config{}, err
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, err
	}
	return vc.Translate()
}

// The embedded copy of gitleaks' rules is the one of the gitleaks version
// go.mod requires. After updating gitleaks, copy its config/gitleaks.toml
// (and LICENSE) into gitleaks/.
func TestGitleaksRulesCurrent(t *testing.T) {
	t.Parallel()
	if !bytes.Equal(gitleaksTOML, []byte(config.DefaultConfig)) {
		t.Error("gitleaks/gitleaks.toml differs from the config/gitleaks.toml of the gitleaks module go.mod requires: copy it again")
	}
}

// The rules decoded from the embedded file are those gitleaks builds from
// it: ids, order, expressions, file names, secret groups, entropy limits,
// keywords, composite and unreported rules, and every allowlist (the rules'
// and the global ones), check by check.
func TestGitleaksRulesDecoded(t *testing.T) {
	t.Parallel()
	cfg, err := defaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := parseGitleaksRules(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(describeGitleaks(cfg), describeOurs(ours)); diff != "" {
		t.Errorf("decoded rules differ from gitleaks' (-gitleaks +ours):\n%s", diff)
	}
}

// configView is a configuration as both decoders can describe it.
type configView struct {
	Rules  []ruleView
	Global []allowlistView
}

// ruleView is a rule as both decoders can describe it.
type ruleView struct {
	ID, Regex, Path   string
	SecretGroup       int
	Entropy           float64
	Keywords          []string
	Required          []string
	SkipReport        bool
	Allowlists        []allowlistView
	RegexSubexpNumber int
}

type allowlistView struct {
	And                bool
	Target             string
	Regexes, StopWords []string
	Commits, Paths     []string
}

func describeGitleaks(cfg config.Config) configView {
	var c configView
	view := func(as []*config.Allowlist) []allowlistView {
		var out []allowlistView
		for _, a := range as {
			v := allowlistView{And: a.MatchCondition == config.AllowlistMatchAnd, Target: a.RegexTarget, Commits: a.Commits, StopWords: slices.Sorted(slices.Values(a.StopWords))}
			for _, re := range a.Regexes {
				v.Regexes = append(v.Regexes, re.String())
			}
			for _, re := range a.Paths {
				v.Paths = append(v.Paths, re.String())
			}
			out = append(out, v)
		}
		return out
	}
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		v := ruleView{ID: r.RuleID, SecretGroup: r.SecretGroup, Entropy: r.Entropy, SkipReport: r.SkipReport, Allowlists: view(r.Allowlists)}
		if r.Regex != nil {
			v.Regex, v.RegexSubexpNumber = r.Regex.String(), r.Regex.NumSubexp()
		}
		if r.Path != nil {
			v.Path = r.Path.String()
		}
		if len(r.Keywords) > 0 {
			v.Keywords = r.Keywords
		}
		for _, q := range r.RequiredRules {
			v.Required = append(v.Required, q.RuleID)
		}
		c.Rules = append(c.Rules, v)
	}
	c.Global = view(cfg.Allowlists)
	return c
}

func describeOurs(g *gitleaksRules) configView {
	var c configView
	view := func(as []*allowlist) []allowlistView {
		var out []allowlistView
		for _, a := range as {
			v := allowlistView{And: a.and, Target: a.target, Commits: a.commits, Paths: a.paths, StopWords: a.stopWords}
			for _, re := range a.regexes {
				v.Regexes = append(v.Regexes, re.String())
			}
			out = append(out, v)
		}
		return out
	}
	for _, r := range g.rules {
		v := ruleView{ID: r.id, Path: r.path, SecretGroup: r.secretGroup, Entropy: r.entropy, Keywords: r.keywords, Required: r.required, SkipReport: r.skipReport, Allowlists: view(r.allow)}
		if r.re != nil {
			v.Regex, v.RegexSubexpNumber = r.re.String(), r.re.NumSubexp()
		}
		c.Rules = append(c.Rules, v)
	}
	c.Global = view(g.global)
	return c
}

// The decoder refuses what it does not know rather than reading a rule
// set other than gitleaks would.
func TestGitleaksRulesRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, file, want string }{
		{"unknown key", "[[rules]]\nid = 'a'\nregex = 'x'\nvalidate = true\n", "validate"},
		{"extend", "[extend]\nuseDefault = true\n", "extend"},
		{"no id", "[[rules]]\nregex = 'x'\n", "without an id"},
		{"twice", "[[rules]]\nid = 'a'\nregex = 'x'\n[[rules]]\nid = 'a'\nregex = 'y'\n", "twice"},
		{"bad regex", "[[rules]]\nid = 'a'\nregex = '('\n", "rule a"},
		{"secret group", "[[rules]]\nid = 'a'\nregex = '(x)'\nsecretGroup = 2\n", "secret group 2 of 1"},
		{"empty allowlist", "[[rules]]\nid = 'a'\nregex = 'x'\n[[rules.allowlists]]\ndescription = 'd'\n", "empty allowlist"},
		{"condition", "[[allowlists]]\ncondition = 'xor'\nregexes = ['x']\n", "condition"},
		{"target", "[[allowlists]]\nregexTarget = 'file'\nregexes = ['x']\n", "regexTarget"},
		{"unknown target", "[[rules]]\nid = 'a'\nregex = 'x'\n[[allowlists]]\ntargetRules = ['b']\nregexes = ['x']\n", `unknown rule "b"`},
		{"unknown required", "[[rules]]\nid = 'a'\nregex = 'x'\n[[rules.required]]\nid = 'b'\n", `unknown rule "b"`},
		{"both forms", "[allowlist]\nregexes = ['x']\n[[allowlists]]\nregexes = ['y']\n", "both"},
	} {
		_, err := parseGitleaksRules([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A targeted allowlist joins its rules' own, after them, and a stop word
// is found in any case.
func TestGitleaksRulesTargeted(t *testing.T) {
	t.Parallel()
	g, err := parseGitleaksRules([]byte(`
[[rules]]
id = "a"
regex = 'x'
keywords = ["X"]
[[rules.allowlists]]
stopwords = ["Own"]
[[allowlists]]
targetRules = ["a"]
condition = "AND"
regexTarget = "line"
regexes = ['y']
`))
	if err != nil {
		t.Fatal(err)
	}
	r := g.rules[0]
	got := fmt.Sprintln(r.keywords, len(r.allow), r.allow[0].stopWords, r.allow[1].and, r.allow[1].target, len(g.global))
	if want := "[x] 2 [own] true line 0\n"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !r.allow[0].containsStopWord("an OWNER") || r.allow[0].containsStopWord("ow") {
		t.Error("stop words are not found as gitleaks finds them")
	}
}
