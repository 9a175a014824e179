package redact

import (
	"regexp"
	"regexp/syntax"
	"sync"
)

// lazyRegexp is a regular expression checked when it is read and compiled
// the first time it runs: most of gitleaks' rules never meet their
// keywords, and each compiled program holds tens of kilobytes.
type lazyRegexp struct {
	expr     string
	subexp   int
	compiled func() *regexp.Regexp
}

// compileLazy parses expr as regexp.Compile does, and returns its error.
func compileLazy(expr string) (*lazyRegexp, error) {
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return &lazyRegexp{expr: expr, subexp: parsed.MaxCap(), compiled: sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(expr) // parsed above
	})}, nil
}

func (re *lazyRegexp) String() string { return re.expr }
func (re *lazyRegexp) NumSubexp() int { return re.subexp }

func (re *lazyRegexp) MatchString(s string) bool { return re.compiled().MatchString(s) }

func (re *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return re.compiled().FindAllStringIndex(s, n)
}

func (re *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	return re.compiled().FindStringSubmatchIndex(s)
}
