package page

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// reasonView is why a call was allowed, asked or refused, for people: a
// plain sentence, and the reason as the gateway decided it when the
// sentence rewords it.
type reasonView struct {
	// Plain is the sentence shown: "Asks first: this call deletes
	// notes.txt."
	Plain string
	// Technical is the decision's reason as given (hint names, where a
	// value came from), shown smaller; "" when Plain is that reason.
	Technical string
}

// verdictWords begin the plain sentence: what the gateway does with the
// call.
var verdictWords = map[string]string{
	"allow":   "Allowed",
	"confirm": "Asks first",
	"deny":    "Refused",
}

// reasonWords are the reasons the gateway's decide stage gives
// (gateway/internal/stage/decide.go), and the audit stage's "rule NAME",
// each matched whole, with its plain sentence after the verdict's words:
// target names what the call acts on (in place of %[1]s), general is the
// sentence when that is not known. %[2]s stands for the rule's name,
// quoted.
var reasonWords = []struct {
	re              *regexp.Regexp
	target, general string
}{
	{regexp.MustCompile(`^the call requires confirmation \(requiresConfirmation, from .*\)$`),
		"the tool wants a person to confirm this call on %[1]s.", "the tool wants a person to confirm this call."},
	{regexp.MustCompile(`^the call deletes \(effect delete, from .*\)$`),
		"this call deletes %[1]s.", "this call deletes data."},
	{regexp.MustCompile(`^the call is destructive \(destructiveHint, from .*\)$`),
		"this call can overwrite or destroy %[1]s.", "this call can overwrite or destroy data."},
	{regexp.MustCompile(`^the call only reads$`),
		"this call only reads %[1]s.", "this call only reads."},
	{regexp.MustCompile(`^the call changes data but does not delete or destroy it$`),
		"this call changes %[1]s but deletes nothing.", "this call changes data but deletes nothing."},
	{regexp.MustCompile(`^the call acts outside this system but does not delete or destroy anything$`),
		"this call reaches outside this system (%[1]s) but deletes nothing.", "this call reaches outside this system but deletes nothing."},
	{regexp.MustCompile(`^the deployer's rule ("(?:[^"\\]|\\.)*")$`),
		"", "the gateway's rule %[2]s says so."},
	{regexp.MustCompile(`^rule (\S+)$`),
		"", "the gateway's rule %[2]s says so."},
	{regexp.MustCompile(`^the decision rule ("(?:[^"\\]|\\.)*") reads the arguments, which cannot be read: .*$`),
		"", "the gateway's rule %[2]s could not read this call's arguments."},
	{regexp.MustCompile(`^the decision rule ("(?:[^"\\]|\\.)*") could not be evaluated \(.*\); read optional arguments with has\(args\.x\)$`),
		"", "the gateway's rule %[2]s could not be evaluated for this call."},
}

// explain words the reason of a call decided verdict ("allow", "confirm",
// "deny"; another leaves the sentence without its opening words), naming
// target (what the call acts on, "" when unknown) where it helps. A
// reason the gateway did not word itself (a deployer's rule's own) is
// shown as written.
func explain(verdict, reason, target string) reasonView {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return reasonView{}
	}
	lead := verdictWords[verdict]
	for _, w := range reasonWords {
		m := w.re.FindStringSubmatch(reason)
		if m == nil {
			continue
		}
		rule := ""
		if len(m) > 1 {
			rule = m[1]
			if u, err := strconv.Unquote(rule); err == nil {
				rule = u
			}
			rule = "“" + clipTarget(rule, false) + "”"
		}
		form := w.general
		if target != "" && w.target != "" {
			form = w.target
		}
		return reasonView{Plain: sentence(lead, strings.NewReplacer("%[1]s", target, "%[2]s", rule).Replace(form)), Technical: reason}
	}
	s := reason
	if r, _ := utf8.DecodeLastRuneInString(s); !unicode.IsPunct(r) {
		s += "."
	}
	return reasonView{Plain: sentence(lead, s)}
}

// sentence joins the verdict's words and the rest, capitalised.
func sentence(lead, rest string) string {
	if lead == "" {
		r, n := utf8.DecodeRuneInString(rest)
		return string(unicode.ToUpper(r)) + rest[n:]
	}
	return lead + ": " + rest
}

// targetNames are the argument names that say what a call acts on, most
// telling first.
var targetNames = approval.TargetNames

// maxTargetRunes bounds the target named in a sentence.
const maxTargetRunes = 60

// requestTarget is what an approval request acts on, from its previewed
// arguments: the value of the first argument named as in targetNames that
// is shown and is a string, cut to maxTargetRunes.
func requestTarget(args []approval.Arg) string {
	for _, name := range targetNames {
		for _, a := range args {
			if !strings.EqualFold(a.Name, name) || a.Withheld || a.Value == "" || strings.ContainsAny(a.Value[:1], "{[") {
				continue
			}
			return clipTarget(a.Value, a.Clipped)
		}
	}
	return ""
}

// recordTarget is what an audited call acted on, from its recorded
// arguments (full level only), chosen as by requestTarget.
func recordTarget(args json.RawMessage) string {
	var m map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &m) != nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	for _, name := range targetNames {
		for _, k := range keys {
			var s string
			if !strings.EqualFold(k, name) || json.Unmarshal(m[k], &s) != nil || s == "" || s == approval.Withheld {
				continue
			}
			return clipTarget(s, false)
		}
	}
	return ""
}

// clipTarget makes s fit a sentence: control, format and separator
// characters escaped ([text.Escape]), at most maxTargetRunes runes (an
// escape counts as one), cut in the middle ("…") so that the end of a
// path or URL, which names the thing, stays. clipped reports s was cut
// already: it then ends in "…".
func clipTarget(s string, clipped bool) string {
	var rs []string
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		rs = append(rs, text.Escape(s[i:i+n]))
		i += n
	}
	if len(rs) > maxTargetRunes {
		head := maxTargetRunes * 2 / 5
		tail := maxTargetRunes - head - 1
		if clipped { // the end is not known: keep the start
			head, tail = maxTargetRunes-1, 0
		}
		rs = append(append(rs[:head:head], "…"), rs[len(rs)-tail:]...)
	} else if clipped {
		rs = append(rs, "…")
	}
	return strings.Join(rs, "")
}

// requestReason words why an approval request waits for a person.
func requestReason(r *approval.Request) reasonView {
	return explain("confirm", r.Reason, requestTarget(r.Args))
}

// recordReason words why an audited call was decided as it was.
func recordReason(r *audit.Record) reasonView {
	return explain(string(r.Decision), r.Reason, recordTarget(r.Args))
}
