package redact

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// gitleaksTOML is gitleaks' default configuration (config/gitleaks.toml of
// the gitleaks version go.mod requires; a test checks it is current).
//
//go:embed gitleaks/gitleaks.toml
var gitleaksTOML []byte

// gitleaksRules is a gitleaks configuration as gitleaks translates it: the
// rules in the file's order, the targeted allowlists appended to their
// rules, and the global allowlists.
type gitleaksRules struct {
	rules  []gitleaksRule
	global []*allowlist
}

// gitleaksRule is one rule of a configuration.
type gitleaksRule struct {
	id          string
	re          *lazyRegexp // nil: the rule only matches file names
	path        string      // not empty: the rule applies to these file names only
	secretGroup int
	entropy     float64
	keywords    []string // lower case
	allow       []*allowlist
	required    []string // ids of the rules this one is reported with
	skipReport  bool
}

// allowlist is a gitleaks allowlist.
type allowlist struct {
	and       bool   // every check must pass, not one
	target    string // what regexes test: "" (the secret), "match" or "line"
	regexes   []*lazyRegexp
	stopWords []string // lower case, sorted, without duplicates
	stop      *keywordMatcher
	commits   []string
	paths     []string
}

// tomlConfig is the part of gitleaks' file format the default file uses;
// anything else is an error rather than silently ignored.
type tomlConfig struct {
	Title      string           `toml:"title"`
	MinVersion string           `toml:"minVersion"`
	Allowlist  *tomlAllowlist   `toml:"allowlist"` // gitleaks' deprecated single form
	Allowlists []*tomlAllowlist `toml:"allowlists"`
	Rules      []struct {
		ID          string           `toml:"id"`
		Description string           `toml:"description"`
		Path        string           `toml:"path"`
		Regex       string           `toml:"regex"`
		SecretGroup int              `toml:"secretGroup"`
		Entropy     float64          `toml:"entropy"`
		Keywords    []string         `toml:"keywords"`
		Tags        []string         `toml:"tags"`
		Allowlist   *tomlAllowlist   `toml:"allowlist"`
		Allowlists  []*tomlAllowlist `toml:"allowlists"`
		Required    []struct {
			ID            string `toml:"id"`
			WithinLines   *int   `toml:"withinLines"`
			WithinColumns *int   `toml:"withinColumns"`
		} `toml:"required"`
		SkipReport bool `toml:"skipReport"`
	} `toml:"rules"`
}

type tomlAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	Commits     []string `toml:"commits"`
	Paths       []string `toml:"paths"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	TargetRules []string `toml:"targetRules"` // global allowlists only
}

// parseGitleaksRules decodes a gitleaks configuration file as gitleaks'
// config.ViperConfig.Translate does, without extending other files.
func parseGitleaksRules(file []byte) (*gitleaksRules, error) {
	var tc tomlConfig
	dec := toml.NewDecoder(bytes.NewReader(file))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tc); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			var keys []string
			for _, e := range strict.Errors {
				keys = append(keys, strings.Join(e.Key(), "."))
			}
			return nil, fmt.Errorf("redact: gitleaks' rules have keys the scanner does not know: %s", strings.Join(keys, ", "))
		}
		return nil, fmt.Errorf("redact: reading gitleaks' rules: %w", err)
	}
	out := &gitleaksRules{}
	index := map[string]int{}
	for _, tr := range tc.Rules {
		if strings.TrimSpace(tr.ID) == "" {
			return nil, fmt.Errorf("redact: a gitleaks rule without an id")
		}
		if _, dup := index[tr.ID]; dup {
			return nil, fmt.Errorf("redact: gitleaks rule %s twice", tr.ID)
		}
		r := gitleaksRule{id: tr.ID, path: tr.Path, secretGroup: tr.SecretGroup, entropy: tr.Entropy, skipReport: tr.SkipReport}
		if tr.Regex != "" {
			re, err := compileLazy(tr.Regex)
			if err != nil {
				return nil, fmt.Errorf("redact: gitleaks rule %s: %w", tr.ID, err)
			}
			r.re = re
		} else if tr.Path == "" {
			return nil, fmt.Errorf("redact: gitleaks rule %s has neither regex nor path", tr.ID)
		}
		if r.re != nil && r.secretGroup > r.re.NumSubexp() {
			return nil, fmt.Errorf("redact: gitleaks rule %s: secret group %d of %d", tr.ID, r.secretGroup, r.re.NumSubexp())
		}
		for _, k := range tr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		lists := tr.Allowlists
		if tr.Allowlist != nil {
			if len(lists) > 0 {
				return nil, fmt.Errorf("redact: gitleaks rule %s has both allowlist forms", tr.ID)
			}
			lists = []*tomlAllowlist{tr.Allowlist}
		}
		for _, ta := range lists {
			if len(ta.TargetRules) > 0 {
				return nil, fmt.Errorf("redact: gitleaks rule %s: targetRules in a rule's allowlist", tr.ID)
			}
			a, err := newAllowlist(ta)
			if err != nil {
				return nil, fmt.Errorf("redact: gitleaks rule %s: %w", tr.ID, err)
			}
			r.allow = append(r.allow, a)
		}
		for _, q := range tr.Required {
			r.required = append(r.required, q.ID)
		}
		index[r.id] = len(out.rules)
		out.rules = append(out.rules, r)
	}
	for _, r := range out.rules {
		for _, q := range r.required {
			if _, ok := index[q]; !ok {
				return nil, fmt.Errorf("redact: gitleaks rule %s requires unknown rule %q", r.id, q)
			}
		}
	}

	lists := tc.Allowlists
	if tc.Allowlist != nil {
		if len(lists) > 0 {
			return nil, fmt.Errorf("redact: gitleaks' rules have both global allowlist forms")
		}
		lists = []*tomlAllowlist{tc.Allowlist}
	}
	for _, ta := range lists {
		a, err := newAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("redact: gitleaks' global allowlist: %w", err)
		}
		if len(ta.TargetRules) == 0 {
			out.global = append(out.global, a)
			continue
		}
		for _, id := range ta.TargetRules {
			i, ok := index[id]
			if !ok {
				return nil, fmt.Errorf("redact: gitleaks' allowlist targets unknown rule %q", id)
			}
			out.rules[i].allow = append(out.rules[i].allow, a)
		}
	}
	return out, nil
}

func newAllowlist(ta *tomlAllowlist) (*allowlist, error) {
	a := &allowlist{commits: ta.Commits, paths: ta.Paths}
	switch strings.ToUpper(ta.Condition) {
	case "AND", "&&":
		a.and = true
	case "", "OR", "||":
	default:
		return nil, fmt.Errorf("allowlist condition %q", ta.Condition)
	}
	switch ta.RegexTarget {
	case "", "secret":
	case "match", "line":
		a.target = ta.RegexTarget
	default:
		return nil, fmt.Errorf("allowlist regexTarget %q", ta.RegexTarget)
	}
	for _, s := range ta.Regexes {
		re, err := compileLazy(s)
		if err != nil {
			return nil, fmt.Errorf("allowlist: %w", err)
		}
		a.regexes = append(a.regexes, re)
	}
	if len(a.commits) == 0 && len(a.paths) == 0 && len(a.regexes) == 0 && len(ta.StopWords) == 0 {
		return nil, fmt.Errorf("an empty allowlist")
	}
	for _, w := range ta.StopWords {
		a.stopWords = append(a.stopWords, strings.ToLower(w))
	}
	slices.Sort(a.stopWords)
	a.stopWords = slices.Compact(a.stopWords)
	if len(a.stopWords) > 0 {
		m, err := newKeywordMatcher(a.stopWords)
		if err != nil {
			return nil, fmt.Errorf("allowlist stop words: %w", err)
		}
		a.stop = m
	}
	return a, nil
}

// containsStopWord reports whether the secret, lower-cased, holds one of
// a's stop words.
func (a *allowlist) containsStopWord(secret string) bool {
	return a.stop != nil && a.stop.found(strings.ToLower(secret))
}
