package redact

//lint:file-ignore SA1019 a result may still hold sampling's content blocks (deprecated by protocol 2026-07-28, SEP-2577), whose text is read and redacted like any other.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/hints"
)

// Kind is a kind of value the redactor looks for.
type Kind string

// The kinds. Secrets are reported by the gitleaks rule that found them
// (for example "github-pat" or "aws-access-token"); the others by their
// own name.
const (
	Secrets     Kind = "secrets"      // gitleaks' default rules
	Email       Kind = "email"        // e-mail addresses
	Phone       Kind = "phone"        // phone numbers, valid in their numbering plan
	PaymentCard Kind = "payment-card" // card numbers passing the Luhn check
	IBAN        Kind = "iban"         // IBANs passing the mod-97 check
	USSSN       Kind = "us-ssn"       // US social security numbers
	IPv4        Kind = "ipv4"         // IPv4 addresses; not a default
)

// DefaultKinds returns the kinds looked for when [Options.Kinds] is nil:
// every kind but [IPv4].
func DefaultKinds() []Kind { return []Kind{Secrets, Email, Phone, PaymentCard, IBAN, USSSN} }

// Off, as [Options.From] or [Options.Withhold], switches that step off.
const Off hints.Sensitivity = "off"

// DefaultMaxBytes is the default of [Options.MaxBytes].
const DefaultMaxBytes = 256 << 10

// workFactor bounds the work of one result: the rules' expressions may
// read workFactor times MaxBytes of text in all (windows, checks, whole
// texts; a byte counts once per 64 instructions of the rule's program,
// each phone number checked counts phoneCost, and the personal-data
// scanners an eighth of the text). Ordinary results use a
// small fraction of it; a result made to match everywhere is withheld
// when it runs out, rather than holding the call for seconds.
const (
	workFactor = 2
	phoneCost  = 512
)

// Options configure a [Redactor]. The zero value of each field means its
// default.
type Options struct {
	// From is the sensitivity from which results are redacted.
	// Zero: confidential.
	From hints.Sensitivity
	// Withhold is the sensitivity from which results are withheld whole.
	// Zero: restricted.
	Withhold hints.Sensitivity
	// Sensitive is the sensitivity a trust-annotations "sensitive": true
	// label stands for. Zero: confidential.
	Sensitive hints.Sensitivity
	// Kinds are the kinds looked for. Nil: [DefaultKinds].
	Kinds []Kind
	// PhoneRegion is the region (ISO 3166 alpha-2) of phone numbers
	// written without a country code. Zero: "US"; "ZZ" to look only for
	// numbers in international form.
	PhoneRegion string
	// MaxBytes bounds the text of one result that is scanned. A result
	// to redact that holds more is withheld rather than passed on
	// unscanned; so is one that would cost more to scan than a text of
	// this size normally does many times over. Zero: [DefaultMaxBytes].
	MaxBytes int
}

// Redactor redacts tool results. It is safe for concurrent use.
type Redactor struct {
	from, withhold, sensitive hints.Sensitivity
	maxBytes                  int
	rules                     func() (*ruleSet, error) // nil when secrets are not looked for
	pii                       []piiScanner
}

// piiScanner is a personal-data detector. Scanners of numbers are given
// where the text's runs of digits start (digitRuns).
type piiScanner struct {
	kind string
	scan func(t string, runs []int, budget *int, emit func(start, end int))
}

// whole adapts a scanner that reads the whole text, charged an eighth of
// its length.
func whole(scan func(t string, emit func(start, end int))) func(string, []int, *int, func(int, int)) {
	return func(t string, _ []int, budget *int, emit func(int, int)) {
		*budget -= len(t) / 8
		scan(t, emit)
	}
}

// numbers adapts a scanner of numbers, charged for each run of digits.
func numbers(scan func(t string, runs []int, emit func(start, end int))) func(string, []int, *int, func(int, int)) {
	return func(t string, runs []int, budget *int, emit func(int, int)) {
		*budget -= 16 * len(runs)
		scan(t, runs, emit)
	}
}

// New returns a Redactor. gitleaks' default rules are loaded once a
// process, when a Redactor first scans a result for secrets (some tens of
// milliseconds), so that a gateway whose results are never redacted
// never holds them.
func New(opts *Options) (*Redactor, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	r := &Redactor{
		from:      or(o.From, hints.SensitivityConfidential),
		withhold:  or(o.Withhold, hints.SensitivityRestricted),
		sensitive: or(o.Sensitive, hints.SensitivityConfidential),
		maxBytes:  o.MaxBytes,
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    hints.Sensitivity
		off  bool
	}{{"From", r.from, true}, {"Withhold", r.withhold, true}, {"Sensitive", r.sensitive, false}} {
		if f.v.Rank() < 0 && !(f.off && f.v == Off) {
			allowed := "public, internal, confidential, restricted"
			if f.off {
				allowed += ", off"
			}
			errs = append(errs, fmt.Errorf("redact: %s: unknown sensitivity %q (allowed: %s)", f.name, f.v, allowed))
		}
	}
	if r.maxBytes == 0 {
		r.maxBytes = DefaultMaxBytes
	} else if r.maxBytes < 0 {
		errs = append(errs, fmt.Errorf("redact: MaxBytes: %d is negative", r.maxBytes))
	}
	region := o.PhoneRegion
	switch region {
	case "":
		region = "US"
	case "ZZ":
		region = ""
	}
	if region != "" && !validRegion(region) {
		errs = append(errs, fmt.Errorf("redact: PhoneRegion: %q is not a region of libphonenumber (use an ISO 3166 alpha-2 code, or ZZ for none)", o.PhoneRegion))
	}
	kinds := o.Kinds
	if kinds == nil {
		kinds = DefaultKinds()
	}
	for _, k := range kinds {
		switch k {
		case Secrets:
			r.rules = secretRules
		case Email:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: whole(scanEmails)})
		case Phone:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: phoneScanner{region: region}.scan})
		case PaymentCard:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: numbers(scanCards)})
		case IBAN:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: numbers(scanIBANs)})
		case USSSN:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: numbers(scanSSNs)})
		case IPv4:
			r.pii = append(r.pii, piiScanner{kind: string(k), scan: numbers(scanIPv4)})
		default:
			errs = append(errs, fmt.Errorf("redact: unknown kind %q (allowed: %s)", k, strings.Join(kindNames(), ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

func or(v, def hints.Sensitivity) hints.Sensitivity {
	if v == "" {
		return def
	}
	return v
}

func kindNames() []string {
	return []string{string(Secrets), string(Email), string(Phone), string(PaymentCard), string(IBAN), string(USSSN), string(IPv4)}
}

// reaches reports whether level is at or above threshold (never for Off
// or an unknown level).
func reaches(level, threshold hints.Sensitivity) bool {
	return threshold != Off && level.Rank() >= 0 && level.Rank() >= threshold.Rank()
}

// Report says what [Redactor.Result] did, without any of the values.
type Report struct {
	// Level is the result's effective sensitivity: the higher of the
	// call's and the trust-annotations labels'; "" when neither says.
	Level hints.Sensitivity `json:"level,omitempty"`
	// Withheld is set when the result was replaced by a notice; Reason
	// then says why.
	Withheld bool   `json:"withheld,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Kinds counts the distinct values redacted, by kind: the gitleaks
	// rule for secrets ("github-pat"), else the kind ("email").
	Kinds map[string]int `json:"kinds,omitempty"`
	// Unscanned counts the binary blocks (images, audio, blobs that are
	// not text) passed on as they were.
	Unscanned int `json:"unscanned,omitempty"`
}

// Redacted reports whether any value was redacted.
func (r Report) Redacted() bool { return len(r.Kinds) > 0 }

// Result returns res as the client may see it, given s, the effective
// sensitivity of this call (from the tool's or the resolution's
// mcp.dev/resultSensitivity hint, or the deployer's rules; "" when
// unknown), raised by any trust-annotations "sensitive" label in the
// result's or a content block's _meta:
//
//   - from Withhold up, a tool error saying the result was withheld and why;
//   - from From up, a copy with every secret and personal value found in
//     text, structured content, embedded resources and resource links
//     replaced by "[REDACTED:kind]";
//   - below From, or when nothing is found, res itself.
//
// res is never modified; treat what is returned as read-only too.
func (r *Redactor) Result(res *mcp.CallToolResult, s hints.Sensitivity) (*mcp.CallToolResult, Report) {
	if res == nil {
		return nil, Report{}
	}
	level, labelled := r.level(res, s)
	rep := Report{Level: level}
	if reaches(level, r.withhold) {
		why := fmt.Sprintf("its sensitivity is %s (%s), and the gateway withholds results from %s up", level, source(labelled, r.sensitive), r.withhold)
		return withheld(&rep, why)
	}
	if !reaches(level, r.from) {
		return res, rep
	}

	values := map[string]string{} // value -> kind
	docs, size, unscanned := collect(res)
	rep.Unscanned = unscanned
	if size > r.maxBytes {
		why := fmt.Sprintf("it holds %s of text at sensitivity %s, more than the %s the gateway scans for secrets and personal data, and it does not pass on what it has not scanned", bytesText(size), level, bytesText(r.maxBytes))
		return withheld(&rep, why)
	}
	budget := workFactor * r.maxBytes
	if !r.detect(docs, values, &budget) {
		return withheld(&rep, tooCostly)
	}
	cuts, ok := r.seams(res.Content, values, &budget)
	if !ok {
		return withheld(&rep, tooCostly)
	}
	if len(values) == 0 {
		return res, rep
	}
	dropCovered(values)

	out, all := applyCuts(res, cuts), values
	for round := 0; round < 4; round++ {
		repl := replacer(all)
		out = rewrite(out, repl)
		// Redacting can bring values together that a detector finds only
		// now (or, rarely, leave one in place): repeat on the output until
		// nothing is left, so that redacting twice changes nothing.
		docs, _, _ = collect(out)
		values = map[string]string{}
		if !r.detect(docs, values, &budget) {
			return withheld(&rep, tooCostly)
		}
		dropCovered(values)
		left := len(values) > 0
		for _, d := range docs {
			left = left || len(repl.find(d.text)) > 0
		}
		if !left {
			rep.Kinds = countKinds(all)
			return out, rep
		}
		maps.Copy(all, values)
	}
	return withheld(&rep, "its secrets and personal data could not be redacted completely")
}

const tooCostly = "scanning it for secrets and personal data would cost far more than a result of its size should"

func source(labelled bool, sensitive hints.Sensitivity) string {
	if labelled {
		return fmt.Sprintf(`labelled "sensitive" by the server, which counts as %s`, sensitive)
	}
	return "declared for this call"
}

func bytesText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// withheld fills rep and returns the notice that replaces a result.
func withheld(rep *Report, why string) (*mcp.CallToolResult, Report) {
	rep.Withheld, rep.Reason, rep.Kinds = true, why, nil
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: "The result of this call was withheld by the gateway's policy: " + why + "."}},
		IsError: true,
	}, *rep
}

// Passes reports whether a result whose JSON is body would come out of
// [Redactor.Result] untouched at sensitivity s, without decoding it: s is
// below both thresholds and body holds no trust-annotations key that
// could raise it. A gateway that forwards results as bytes decodes only
// the others.
func (r *Redactor) Passes(s hints.Sensitivity, body []byte) bool {
	if s.Rank() < 0 {
		s = ""
	}
	if reaches(s, r.withhold) || reaches(s, r.from) {
		return false
	}
	// The key's name without its prefix, which an encoder may write as
	// "io.modelcontextprotocol\/trust-annotations".
	return !reaches(r.sensitive, r.withhold) && !reaches(r.sensitive, r.from) ||
		!bytes.Contains(body, []byte("trust-annotations"))
}

// trustAnnotations is the _meta key of the trust-annotations extension.
const trustAnnotations = "io.modelcontextprotocol/trust-annotations"

// level is the higher of s and the labels' sensitivity; labelled reports
// that a label decided it.
func (r *Redactor) level(res *mcp.CallToolResult, s hints.Sensitivity) (hints.Sensitivity, bool) {
	if s.Rank() < 0 {
		s = ""
	}
	if s.Rank() >= r.sensitive.Rank() || !labelledSensitive(res) {
		return s, false
	}
	return r.sensitive, true
}

// labelledSensitive reports whether the result or one of its content
// blocks carries a trust-annotations label with "sensitive": true. A
// block's label can only add to the result's; false or absent claims
// nothing.
func labelledSensitive(res *mcp.CallToolResult) bool {
	if sensitiveMeta(res.Meta) {
		return true
	}
	for _, c := range res.Content {
		if sensitiveMeta(contentMeta(c)) {
			return true
		}
		if e, ok := c.(*mcp.EmbeddedResource); ok && e.Resource != nil && sensitiveMeta(e.Resource.Meta) {
			return true
		}
	}
	return false
}

func sensitiveMeta(m mcp.Meta) bool {
	ta, ok := m[trustAnnotations].(map[string]any)
	return ok && ta["sensitive"] == true
}

func contentMeta(c mcp.Content) mcp.Meta {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Meta
	case *mcp.ImageContent:
		return c.Meta
	case *mcp.AudioContent:
		return c.Meta
	case *mcp.ResourceLink:
		return c.Meta
	case *mcp.EmbeddedResource:
		return c.Meta
	case *mcp.ToolUseContent:
		return c.Meta
	case *mcp.ToolResultContent:
		return c.Meta
	}
	return nil
}

// detect adds to values what every detector finds in docs; false when
// the budget ran out.
func (r *Redactor) detect(docs []doc, values map[string]string, budget *int) bool {
	seen := make(map[string]bool, len(docs))
	var seenLines map[uint64]bool
	for _, d := range docs {
		if seen[d.text] {
			continue // the same text twice
		}
		seen[d.text] = true
		if d.pieces != nil && len(docs) > 1 {
			if seenLines == nil {
				seenLines = map[uint64]bool{}
			}
			if l := d.lines(); seenLines[l] {
				continue // a text that mirrors the structured content
			} else {
				seenLines[l] = true
			}
		}
		if !r.scanAll(d.text, budget, func(kind string, s, e int) { d.add(values, kind, s, e) }) {
			return false
		}
	}
	return true
}

// scanAll runs every detector over t and over the disguised spelling it
// may hold (percent-escaped, zero-width characters inside, fullwidth),
// read as what it spells: what is found there is reported where it was
// written. False when the budget ran out.
func (r *Redactor) scanAll(t string, budget *int, emit func(kind string, start, end int)) bool {
	if !r.scan(t, budget, emit) {
		return false
	}
	if f, ok := fold(t); ok {
		return r.scan(f.text, budget, func(kind string, s, e int) {
			s, e = f.original(s, e)
			emit(kind, s, e)
		})
	}
	return true
}

// scan runs every detector over t; false when the budget ran out, or
// when the secret rules do not load (the embedded rules always do: a test
// loads them), so that the result is withheld rather than unscanned.
func (r *Redactor) scan(t string, budget *int, emit func(kind string, start, end int)) bool {
	if r.rules != nil {
		rs, err := r.rules()
		if err != nil || !rs.scan(t, budget, func(f secretFinding) { emit(f.rule, f.start, f.end) }) {
			return false
		}
	}
	var runs []int
	if len(r.pii) > 0 {
		runs = digitRuns(t)
		*budget -= len(t) / 8
	}
	for _, p := range r.pii {
		p.scan(t, runs, budget, func(s, e int) { emit(p.kind, s, e) })
	}
	return *budget >= 0
}

// priority orders kinds for a value found by several: a specific secret
// rule, then personal data, then gitleaks' generic rules.
func priority(kind string) int {
	switch Kind(kind) {
	case Email, Phone, PaymentCard, IBAN, USSSN, IPv4:
		return 1
	}
	if strings.HasPrefix(kind, "generic") {
		return 2
	}
	return 0
}

func addValue(values map[string]string, v, kind string) {
	if v == "" {
		return
	}
	if old, ok := values[v]; ok && priority(old) <= priority(kind) {
		return
	}
	values[v] = kind
}

// dropCovered drops the values that say less than another: a value of
// gitleaks' generic rules within a value of a specific rule, as gitleaks
// does, and personal data around a specific secret (the token in
// "https://user:token@host" is not an e-mail address).
func dropCovered(values map[string]string) {
	for v, k := range values {
		for w, l := range values {
			if w == v || priority(l) != 0 {
				continue
			}
			if priority(k) == 2 && strings.Contains(w, v) || priority(k) == 1 && strings.Contains(v, w) {
				delete(values, v)
				break
			}
		}
	}
}

func countKinds(values map[string]string) map[string]int {
	out := map[string]int{}
	for _, k := range values {
		out[k]++
	}
	return out
}

// placeholder is what replaces a value of kind.
func placeholder(kind string) string { return "[REDACTED:" + kind + "]" }

// replacer replaces every value, and the forms it takes when written
// inside a JSON string, by its placeholder.
func replacer(values map[string]string) *valueReplacer {
	kinds := map[string]string{} // form -> kind
	for v, k := range values {
		for _, f := range jsonForms(v) {
			// One value's form may be another's: the better kind names it.
			if old, ok := kinds[f]; !ok || priority(k) < priority(old) || priority(k) == priority(old) && k < old {
				kinds[f] = k
			}
		}
	}
	r := &valueReplacer{olds: slices.Collect(maps.Keys(kinds))}
	slices.SortFunc(r.olds, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, o := range r.olds {
		r.news = append(r.news, placeholder(kinds[o]))
	}
	if len(r.olds) > manyStrings {
		r.byPrefix = map[string][]int{}
		for i, o := range r.olds {
			if len(o) >= prefixLen {
				r.byPrefix[o[:prefixLen]] = append(r.byPrefix[o[:prefixLen]], i)
			}
		}
	}
	return r
}

// valueReplacer replaces strings as strings.Replacer does (leftmost first;
// of two at one place, the one listed first, here the longer), finding
// each with strings.Index: the values are few, the strings many.
type valueReplacer struct {
	olds, news []string
	byPrefix   map[string][]int // with many olds: olds by their first prefixLen bytes
}

const (
	prefixLen   = 4
	manyStrings = 16
)

func (r *valueReplacer) Replace(s string) string {
	return r.apply(s, r.find(s))
}

// occurrence is a place where old string i of a valueReplacer occurs.
type occurrence struct{ start, end, i int }

// find returns the occurrences a replacement replaces, in order.
func (r *valueReplacer) find(s string) []occurrence {
	var found []occurrence
	if r.byPrefix != nil {
		// Many values: one pass over s, looking each place up by its
		// first bytes.
		for p := 0; p+prefixLen <= len(s); p++ {
			for _, i := range r.byPrefix[s[p:p+prefixLen]] {
				if strings.HasPrefix(s[p:], r.olds[i]) {
					found = append(found, occurrence{p, p + len(r.olds[i]), i})
				}
			}
		}
	}
	for i, o := range r.olds {
		if r.byPrefix != nil && len(o) >= prefixLen {
			continue
		}
		for off := 0; off+len(o) <= len(s); {
			j := strings.Index(s[off:], o)
			if j < 0 {
				break
			}
			found = append(found, occurrence{off + j, off + j + len(o), i})
			off += j + 1
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b occurrence) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.i - b.i
	})
	kept, end := found[:0], 0
	for _, o := range found {
		if o.start >= end {
			kept = append(kept, o)
			end = o.end
		}
	}
	return kept
}

// apply replaces the occurrences find returned for s.
func (r *valueReplacer) apply(s string, found []occurrence) string {
	if len(found) == 0 {
		return s
	}
	var b strings.Builder
	pos := 0
	for _, o := range found {
		b.WriteString(s[pos:o.start])
		b.WriteString(r.news[o.i])
		pos = o.end
	}
	b.WriteString(s[pos:])
	return b.String()
}
