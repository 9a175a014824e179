package approval

import (
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/hints"
)

// withholdSecrets replaces, in the names and values of args (rendered,
// not yet cleaned), every value that looks like a secret by
// "[REDACTED:kind]", and notes the kinds in Arg.Secrets. The arguments are
// scanned together, so that a value found in one is withheld in all. It
// reports false, changing nothing, when they could not be scanned.
func withholdSecrets(args []Arg) bool {
	r, err := redact.SecretScanner() // secrets only: an approver must see to whom a call writes
	if err != nil {
		return false
	}
	blocks := make([]mcp.Content, 0, 2*len(args))
	for _, a := range args {
		blocks = append(blocks, &mcp.TextContent{Text: a.Name}, &mcp.TextContent{Text: a.Value})
	}
	// A detector's match that is no secret's form (a private-key rule
	// spanning a command) would hide what runs: such arguments are not
	// shown, so not approvable.
	found, ok := r.Find(&mcp.CallToolResult{Content: blocks})
	if !ok {
		return false
	}
	for v := range found {
		if !redact.Plausible(v) {
			return false
		}
	}
	res, rep := r.Result(&mcp.CallToolResult{Content: blocks}, hints.SensitivityPublic)
	if rep.Withheld || res == nil || len(res.Content) != len(blocks) {
		return false
	}
	if !rep.Redacted() {
		return true
	}
	texts := make([]string, len(blocks))
	for i, b := range res.Content {
		t, ok := b.(*mcp.TextContent)
		if !ok {
			return false
		}
		texts[i] = t.Text
	}
	for i := range args {
		a := &args[i]
		name, value := texts[2*i], texts[2*i+1]
		a.Secrets = addKinds(addKinds(nil, a.Name, name), a.Value, value)
		a.Name, a.Value = name, value
	}
	return true
}

// placeholderRE matches what redact puts in a secret's place.
var placeholderRE = regexp.MustCompile(`\[REDACTED:([^\]\s]+)\]`)

// addKinds adds to kinds those of the placeholders that redacting in gave
// out ("secret" if none can be told), sorted, once each.
func addKinds(kinds []string, in, out string) []string {
	if in == out {
		return kinds
	}
	before := map[string]int{}
	for _, m := range placeholderRE.FindAllStringSubmatch(in, -1) {
		before[m[1]]++
	}
	found := false
	for _, m := range placeholderRE.FindAllStringSubmatch(out, -1) {
		if before[m[1]] > 0 {
			before[m[1]]--
			continue
		}
		found = true
		if !slices.Contains(kinds, m[1]) {
			kinds = append(kinds, m[1])
		}
	}
	if !found && !slices.Contains(kinds, "secret") {
		kinds = append(kinds, "secret")
	}
	slices.Sort(kinds)
	return kinds
}
