package redact

import (
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
