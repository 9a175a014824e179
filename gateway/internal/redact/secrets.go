package redact

import (
	"fmt"
	"math"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// secretRules are gitleaks' default rules, loaded once per process.
var secretRules = sync.OnceValues(loadSecretRules)

// rulesLoaded is set when the process has loaded gitleaks' rules.
var rulesLoaded atomic.Bool

// RulesLoaded reports whether this process has loaded gitleaks' rules,
// which a [Redactor] does when it first scans a result for secrets.
func RulesLoaded() bool { return rulesLoaded.Load() }

// ruleSet is a compiled rule set with its keyword automaton.
type ruleSet struct {
	rules    []*secretRule
	keywords []string // lower case
	matcher  *keywordMatcher
	users    [][]int // keyword index -> rules that list it
	global   []*allowlist
}

// secretRule is one gitleaks rule.
type secretRule struct {
	id          string
	re          *lazyRegexp
	secretGroup int
	entropy     float64
	allow       []*allowlist
	keywords    []int
	plans       []plan // nil: run on the whole text when a keyword occurs
	// weight scales what reading a byte costs the budget: Go's engine
	// works in proportion to the program's size.
	weight int
}

func loadSecretRules() (*ruleSet, error) {
	rulesLoaded.Store(true)
	cfg, err := parseGitleaksRules(gitleaksTOML)
	if err != nil {
		return nil, err
	}
	return newRuleSet(cfg)
}

func newRuleSet(cfg *gitleaksRules) (*ruleSet, error) {
	rs := &ruleSet{global: cfg.global}
	index := map[string]int{}
	for _, r := range cfg.rules {
		if r.re == nil || r.path != "" || r.skipReport || len(r.required) > 0 || len(r.keywords) == 0 {
			// Rules limited to some file names do not apply to a result,
			// which has none, as gitleaks does not apply them to a text
			// without one. Rules reported only as part of another, and
			// composite rules and rules without keywords, are not in the
			// default set (a test checks it).
			continue
		}
		sr := &secretRule{id: r.id, re: r.re, secretGroup: r.secretGroup, entropy: r.entropy, allow: r.allow}
		var kws []string
		for _, k := range r.keywords {
			i, ok := index[k]
			if !ok {
				i = len(rs.keywords)
				index[k] = i
				rs.keywords = append(rs.keywords, k)
				rs.users = append(rs.users, nil)
			}
			if !slices.Contains(sr.keywords, i) {
				sr.keywords = append(sr.keywords, i)
				rs.users[i] = append(rs.users[i], len(rs.rules))
				kws = append(kws, k)
			}
		}
		ascii := true
		for _, k := range kws {
			ascii = ascii && isASCII(k)
		}
		if ascii {
			parsed, err := syntax.Parse(r.re.String(), syntax.Perl)
			if err != nil {
				return nil, fmt.Errorf("redact: rule %s: %w", r.id, err)
			}
			sr.plans = plans(parsed, kws)
			if prog, err := syntax.Compile(parsed.Simplify()); err == nil {
				sr.weight = max(1, len(prog.Inst)/64)
			}
			// plans index keywords by their position in kws; map them to
			// the set's indexes.
			for pi := range sr.plans {
				m := make(map[int][]elemOcc, len(sr.plans[pi].elems))
				for k, occ := range sr.plans[pi].elems {
					m[index[kws[k]]] = occ
				}
				sr.plans[pi].elems = m
			}
		}
		rs.rules = append(rs.rules, sr)
	}
	m, err := newKeywordMatcher(rs.keywords)
	if err != nil {
		return nil, err
	}
	rs.matcher = m
	return rs, nil
}

// containsAll reports whether t holds every one of lits (lower case),
// ignoring ASCII case.
func containsAll(t string, lits []string) bool {
	for _, l := range lits {
		if indexFold(t, l) < 0 {
			return false
		}
	}
	return true
}

// indexFold is strings.Index ignoring ASCII case, for a lower-case sub.
func indexFold(t, sub string) int {
	if sub == "" {
		return 0
	}
	c0 := sub[0]
	for i := 0; i+len(sub) <= len(t); i++ {
		if lowerByte(t[i]) == c0 && equalFold(t[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// equalFold reports whether t equals the lower-case s, ignoring ASCII case.
func equalFold(t, s string) bool {
	if len(t) != len(s) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if lowerByte(t[i]) != s[i] {
			return false
		}
	}
	return true
}

func lowerByte(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// scanState is the per-text working memory of a scan, pooled.
type scanState struct {
	full    []bool     // rule index -> run on the whole text
	windows [][]window // rule index -> windows
	marked  []bool     // rule index -> in touched
	touched []int      // rules with work
}

type window struct{ start, end int }

var scanStates = sync.Pool{New: func() any { return new(scanState) }}

// secretFinding is what a rule found: the rule and the secret's span.
type secretFinding struct {
	rule       string
	start, end int
}

// scan calls emit for every secret in t, as gitleaks' detector reports it
// for a fragment without a file name, except that gitleaks:allow comments
// are not honoured (the text comes from a server, not a developer).
//
// budget bounds the work: it is decreased by the bytes of text the rules'
// expressions read (windows, whole texts and checks), and scan stops and
// returns false when it runs out, so that a text made to match everywhere
// costs a bounded time.
func (rs *ruleSet) scan(t string, budget *int, emit func(secretFinding)) bool {
	src := origin{text: t}
	if strings.ContainsRune(t, '\u212A') || strings.ContainsRune(t, '\u017F') {
		// The two runes that fold to ASCII letters would defeat the
		// windows: the rules read a copy with ASCII letters in their
		// place, and what they match is mapped back to t.
		src.fold = foldRunes(t)
		t = src.fold.text
	}
	st := scanStates.Get().(*scanState)
	defer scanStates.Put(st)
	if cap(st.full) < len(rs.rules) {
		st.full = make([]bool, len(rs.rules))
		st.marked = make([]bool, len(rs.rules))
		st.windows = make([][]window, len(rs.rules))
	}
	st.full = st.full[:len(rs.rules)]
	st.marked = st.marked[:len(rs.rules)]
	st.windows = st.windows[:len(rs.rules)]
	st.touched = st.touched[:0]
	defer func() {
		for _, r := range st.touched {
			st.full[r] = false
			st.marked[r] = false
			st.windows[r] = st.windows[r][:0]
		}
	}()

	ascii := rs.matcher.walk(t, func(p, k int) {
		if *budget < 0 {
			return
		}
		for _, ri := range rs.users[k] {
			rs.mark(st, ri)
			r := rs.rules[ri]
			if st.full[ri] {
				continue
			}
			if r.plans == nil {
				st.full[ri] = true
				continue
			}
			for pi := range r.plans {
				st.windows[ri] = r.plans[pi].appendWindows(st.windows[ri], t, p, k, budget)
			}
		}
	})
	if !ascii {
		// gitleaks selects rules by their keywords in the text lower-cased
		// as Unicode. For a rule run in windows that changes nothing (its
		// expression cannot match a keyword that only Unicode folding
		// makes); the others run on the whole text.
		if lower := strings.ToLower(t); lower != t {
			rs.matcher.walk(lower, func(_, k int) {
				for _, ri := range rs.users[k] {
					if rs.rules[ri].plans == nil {
						rs.mark(st, ri)
						st.full[ri] = true
					}
				}
			})
		}
	}

	for _, ri := range st.touched {
		if *budget < 0 {
			return false
		}
		r := rs.rules[ri]
		if !st.full[ri] && !rs.runWindows(r, t, st.windows[ri], budget, src, emit) {
			st.full[ri] = true
		}
		if st.full[ri] {
			if *budget -= len(t) * max(1, r.weight); *budget < 0 {
				return false
			}
			for _, m := range r.re.FindAllStringIndex(t, -1) {
				rs.report(r, src, t, m[0], m[1], emit)
			}
		}
	}
	return *budget >= 0
}

// origin is the text a scan reports on, and the copy its rules read
// when that differs.
type origin struct {
	text string
	fold *folded // nil: the rules read text
}

// orig maps a position of what the rules read to text.
func (s origin) orig(p int) int {
	if s.fold == nil || p < 0 {
		return p
	}
	return s.fold.orig(p)
}

// folded is a text with U+212A and U+017F replaced by "K" and "s", and the
// positions where it is shorter than the original.
type folded struct {
	text  string
	at    []int // positions in text after which the original is longer
	extra []int // by how much, in total, up to there
}

func foldRunes(t string) *folded {
	f := &folded{}
	var b strings.Builder
	total := 0
	for i := 0; i < len(t); {
		r, w := utf8.DecodeRuneInString(t[i:])
		switch r {
		case '\u212A':
			b.WriteByte('K')
			total += 2
		case '\u017F':
			b.WriteByte('s')
			total++
		default:
			b.WriteString(t[i : i+w]) // as it is, valid or not
			i += w
			continue
		}
		i += w
		f.at = append(f.at, b.Len())
		f.extra = append(f.extra, total)
	}
	f.text = b.String()
	return f
}

// orig maps a position of f.text to the original text.
func (f *folded) orig(p int) int {
	i := sort.SearchInts(f.at, p+1) // replacements ending at or before p
	if i == 0 {
		return p
	}
	return p + f.extra[i-1]
}

func (rs *ruleSet) mark(st *scanState, r int) {
	if !st.marked[r] {
		st.marked[r] = true
		st.touched = append(st.touched, r)
	}
}

// runWindows runs r over the merged windows; false when a match touches a
// window's inner edge, where the cut could have made or changed it (the
// rule then runs on the whole text instead).
func (rs *ruleSet) runWindows(r *secretRule, t string, ws []window, budget *int, src origin, emit func(secretFinding)) bool {
	if len(ws) == 0 {
		return true
	}
	slices.SortFunc(ws, func(a, b window) int { return a.start - b.start })
	merged := ws[:1]
	for _, w := range ws[1:] {
		last := &merged[len(merged)-1]
		if w.start <= last.end {
			last.end = max(last.end, w.end)
		} else {
			merged = append(merged, w)
		}
	}
	type found struct {
		off int
		m   []int
	}
	var all []found
	for _, w := range merged {
		if *budget -= (w.end - w.start) * max(1, r.weight); *budget < 0 {
			return true // the caller stops
		}
		for _, m := range r.re.FindAllStringIndex(t[w.start:w.end], -1) {
			if (m[0] == 0 && w.start > 0) || (m[1] == w.end-w.start && w.end < len(t)) {
				return false
			}
			all = append(all, found{w.start, m})
		}
	}
	for _, f := range all {
		rs.report(r, src, t, f.off+f.m[0], f.off+f.m[1], emit)
	}
	return true
}

// report applies gitleaks' secret extraction, entropy and allowlists to
// the match [ms, me) of what the rules read (read) and emits what
// survives, in src.text. As gitleaks does, the groups are those of the
// expression matched again on the match alone: matching without groups
// first is much cheaper in Go's engine.
func (rs *ruleSet) report(r *secretRule, src origin, read string, ms, me int, emit func(secretFinding)) {
	for me > ms && read[me-1] == '\n' {
		me--
	}
	for ms < me && read[ms] == '\n' {
		ms++
	}
	ss, se := ms, me
	if g := r.re.FindStringSubmatchIndex(read[ms:me]); len(g) > 2 {
		groups := len(g) / 2
		if r.secretGroup > 0 {
			if r.secretGroup < groups && g[2*r.secretGroup] >= 0 {
				ss, se = ms+g[2*r.secretGroup], ms+g[2*r.secretGroup+1]
			}
		} else {
			for i := 1; i < groups; i++ {
				if g[2*i] >= 0 && g[2*i+1] > g[2*i] {
					ss, se = ms+g[2*i], ms+g[2*i+1]
					break
				}
			}
		}
	}
	t := src.text
	ms, me, ss, se = src.orig(ms), src.orig(me), src.orig(ss), src.orig(se)
	if se <= ss {
		return
	}
	secret := t[ss:se]
	if r.entropy != 0 && entropy(secret) <= r.entropy {
		return
	}
	match := t[ms:me]
	ls := strings.LastIndexByte(t[:ms], '\n') + 1
	le := strings.IndexAny(t[me:], "\r\n")
	if le < 0 {
		le = len(t)
	} else {
		le += me
	}
	line := t[ls:le]
	for _, a := range rs.global {
		if allowed(a, secret, match, line) {
			return
		}
	}
	for _, a := range r.allow {
		if allowed(a, secret, match, line) {
			return
		}
	}
	emit(secretFinding{rule: r.id, start: ss, end: se})
}

// allowed is gitleaks' allowlist check for a finding without a commit or
// a file: with the OR condition a regex or a stop word suffices; with AND
// every check the allowlist has must pass, and commit and path checks fail.
func allowed(a *allowlist, secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	// The expressions one by one rather than RegexAllowed's alternation
	// of all of them: most are anchored and fail at once on their own.
	regex := false
	for _, re := range a.regexes {
		if re.MatchString(target) {
			regex = true
			break
		}
	}
	stop := a.containsStopWord(secret)
	if a.and {
		if len(a.commits) > 0 || len(a.paths) > 0 {
			return false
		}
		if len(a.regexes) > 0 && !regex {
			return false
		}
		if len(a.stopWords) > 0 && !stop {
			return false
		}
		return len(a.regexes) > 0 || len(a.stopWords) > 0
	}
	return regex || stop
}

// entropy is the Shannon entropy of s in bits per rune, as gitleaks
// computes it (rune counts over the byte length).
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var small [128]int
	var big map[rune]int
	for _, c := range s {
		if c < 128 {
			small[c]++
			continue
		}
		if big == nil {
			big = map[rune]int{}
		}
		big[c]++
	}
	inv := 1 / float64(len(s))
	e := 0.0
	add := func(n int) {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range small {
		add(n)
	}
	for _, n := range big {
		add(n)
	}
	return e
}
