package approval

import (
	"slices"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
)

// withholdSecrets replaces, in the names and values of args (rendered,
// not yet cleaned), every value that looks like a secret by
// "[REDACTED:kind]" ([redact.ReplaceSecrets]: secrets only, since an
// approver must see to whom a call writes), and notes the kinds in
// Arg.Secrets. It reports false, changing nothing, when they could not be
// scanned, or when a detector's match has no secret's form (a private-key
// rule spanning a command): shown as [REDACTED] it would hide what runs,
// so such arguments are not approvable.
func withholdSecrets(args []Arg) bool {
	texts := make([]string, 0, 2*len(args))
	for _, a := range args {
		texts = append(texts, a.Name, a.Value)
	}
	found, ok := redact.ReplaceSecrets(texts)
	if !ok || found.Implausible {
		return false
	}
	for i := range args {
		a := &args[i]
		a.Name, a.Value = found.Texts[2*i], found.Texts[2*i+1]
		if kinds := mergeKinds(found.Kinds[2*i], found.Kinds[2*i+1]); kinds != nil {
			a.Secrets = kinds
		}
	}
	return true
}

// mergeKinds returns the kinds of a and b, sorted, once each; nil if none.
func mergeKinds(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	kinds := slices.Concat(a, b)
	slices.Sort(kinds)
	return slices.Compact(kinds)
}
