package redact

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/hints"
)

// SecretScanner returns the process's one Redactor that looks for secrets
// only (gitleaks' rules), at every sensitivity, withholding nothing: what
// the approval page and the flow tracker scan with.
func SecretScanner() (*Redactor, error) { return secretScanner() }

var secretScanner = sync.OnceValues(func() (*Redactor, error) {
	return New(&Options{From: hints.SensitivityPublic, Withhold: Off, Kinds: []Kind{Secrets}})
})

// Find returns the values r's detectors find in res, whatever its
// sensitivity, by value with their kind. It reports false, with nothing
// found, when res holds more text than r scans or would cost too much to
// scan.
func (r *Redactor) Find(res *mcp.CallToolResult) (map[string]string, bool) {
	if res == nil {
		return nil, true
	}
	docs, size, _ := collect(res)
	if size > r.maxBytes {
		return nil, false
	}
	values := map[string]string{}
	budget := workFactor * r.maxBytes
	if !r.detect(docs, values, &budget) {
		return nil, false
	}
	dropCovered(values)
	return values, true
}

// maxPlausible bounds the length of a value that can be a secret.
const maxPlausible = 16 << 10

// Plausible reports whether a value a detector found has a secret's form:
// at most 16 KiB, without the characters commands and code are made of
// (quotes, semicolons, pipes, dollars, brackets). A rule that spans
// arbitrary text (a private key's "BEGIN ... KEY-----") may otherwise find
// a command, and whoever shows it as [REDACTED] would hide what runs.
func Plausible(value string) bool {
	return len(value) <= maxPlausible && !strings.ContainsAny(value, ";|&$<>`'\"(){}!*\\")
}

// Replaced is what [ReplaceSecrets] made of a set of texts.
type Replaced struct {
	// Texts are the texts with every plausible secret replaced by
	// "[REDACTED:kind]".
	Texts []string
	// Kinds are, per text, the kinds of the secrets replaced in it, sorted,
	// once each; nil where none was.
	Kinds [][]string
	// Implausible reports a detector's match without a secret's form (see
	// [Plausible]), left in clear: whoever shows it as [REDACTED] would
	// hide what runs.
	Implausible bool
}

// ReplaceSecrets scans texts together for secrets (gitleaks' rules), so
// that a value found in one is replaced in all, longest value first. It
// reports false when they could not be scanned (too much text, or a
// detector's budget spent).
func ReplaceSecrets(texts []string) (Replaced, bool) {
	out := Replaced{Texts: texts, Kinds: make([][]string, len(texts))}
	if len(texts) == 0 {
		return out, true
	}
	r, err := SecretScanner()
	if err != nil {
		return Replaced{}, false
	}
	blocks := make([]mcp.Content, len(texts))
	for i, t := range texts {
		blocks[i] = &mcp.TextContent{Text: t}
	}
	found, ok := r.Find(&mcp.CallToolResult{Content: blocks})
	if !ok {
		return Replaced{}, false
	}
	values := make([]string, 0, len(found))
	for value := range found {
		if Plausible(value) {
			values = append(values, value)
		} else {
			out.Implausible = true
		}
	}
	if len(values) == 0 {
		return out, true
	}
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(values))
	for _, value := range values {
		pairs = append(pairs, value, "[REDACTED:"+found[value]+"]")
	}
	replacer := strings.NewReplacer(pairs...)
	out.Texts = make([]string, len(texts))
	for i, t := range texts {
		out.Texts[i] = replacer.Replace(t)
		if out.Texts[i] == t {
			continue
		}
		for _, value := range values {
			if strings.Contains(t, value) && !slices.Contains(out.Kinds[i], found[value]) {
				out.Kinds[i] = append(out.Kinds[i], found[value])
			}
		}
		slices.Sort(out.Kinds[i])
	}
	return out, true
}
