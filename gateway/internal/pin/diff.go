package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/requeststate"
)

// Bounds of a diff: what it shows of a change, never what it compares.
const (
	maxChanges   = 40  // changes listed; the rest are counted
	maxLines     = 30  // changed lines of a description or title
	maxLineRunes = 200 // runes of one line shown
	maxValue     = 80  // runes of one value shown
	maxLCSCells  = 250_000
	maxPath      = 200 // bytes of a field's path; deeper changes are shown whole
)

// Caution says which way a change moves a tool's caution.
type Caution string

// The directions of a change.
const (
	// CautionNone: the change neither adds nor removes caution (a
	// description, a schema), or the field carries none.
	CautionNone Caution = ""
	// CautionAdded: the tool now asks for more care (destructiveHint
	// false to true, effect read to delete, confirmation required).
	CautionAdded Caution = "adds"
	// CautionRemoved: the tool now asks for less (destructiveHint true to
	// false, readOnlyHint false to true, effect delete to read): a policy
	// bypass if accepted silently.
	CautionRemoved Caution = "removes"
)

// Change is one field that differs between two definitions.
type Change struct {
	// Field is the path of the field: "description",
	// "inputSchema.properties.path.type", "annotations.destructiveHint",
	// "_meta.mcp.dev/effect".
	Field string `json:"field"`
	// Old and New are the two values, shown as compact JSON, bounded and
	// with control characters escaped; "(absent)" for a missing value.
	// A value that is a default or derived says so: "true (default)".
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Lines is the line diff of a description: "- " removed lines, "+ "
	// added lines, bounded.
	Lines []string `json:"lines,omitempty"`
	// Caution is the direction of the change.
	Caution Caution `json:"caution,omitempty"`
}

func (c Change) String() string {
	var b strings.Builder
	b.WriteString(c.Field)
	if c.Lines != nil {
		b.WriteString(":")
		for _, l := range c.Lines {
			b.WriteString("\n    " + l)
		}
	} else {
		b.WriteString(": " + c.Old + " -> " + c.New)
	}
	switch c.Caution {
	case CautionAdded:
		b.WriteString(" (adds caution)")
	case CautionRemoved:
		b.WriteString(" (removes caution)")
	}
	return b.String()
}

// Class sums up a diff.
type Class int

// The classes of a diff, from harmless to dangerous.
const (
	// Unchanged: the definitions are the same.
	Unchanged Class = iota
	// AddsCaution: every change adds caution.
	AddsCaution
	// Other: some change neither adds nor removes caution (a description,
	// a schema), and none removes it.
	Other
	// RemovesCaution: at least one change removes caution.
	RemovesCaution
)

func (c Class) String() string {
	switch c {
	case Unchanged:
		return "unchanged"
	case AddsCaution:
		return "adds caution"
	case Other:
		return "changed"
	case RemovesCaution:
		return "removes caution"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Diff is what changed from one definition to another, field by field.
type Diff struct {
	// Changes are the changed fields: annotations and policy hints first,
	// then title, description and the schemas.
	Changes []Change `json:"changes"`
	// Omitted counts the changes of schemas left out of Changes.
	Omitted int `json:"omitted,omitempty"`
	// New reports that nothing of the tool was approved (its pin is a
	// [NewToolPin]): every field is shown as it is served.
	New bool `json:"new,omitempty"`
	// Class sums the changes up, the omitted ones included.
	Class Class `json:"-"`
}

// Fields returns the changed fields, without the omitted ones.
func (d *Diff) Fields() []string {
	out := make([]string, len(d.Changes))
	for i, c := range d.Changes {
		out[i] = c.Field
	}
	return out
}

// Summary names the changed fields in one short line, those that remove
// caution first with their values ("annotations.destructiveHint true ->
// false, description, inputSchema").
func (d *Diff) Summary() string {
	var parts []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(parts) < 8 {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	if d.New {
		add(FieldNewTool)
	}
	for _, c := range d.Changes {
		if c.Caution == CautionRemoved {
			add(c.Field + " " + c.Old + " -> " + c.New)
		}
	}
	for _, c := range d.Changes {
		if c.Caution != CautionRemoved {
			top, _, _ := strings.Cut(c.Field, ".")
			if top == "annotations" || top == "_meta" {
				top = c.Field
			}
			add(top)
		}
	}
	if len(parts) == 0 && d.Omitted > 0 {
		add("inputSchema")
	}
	return strings.Join(parts, ", ")
}

// String writes the diff for a person, one change per line.
func (d *Diff) String() string {
	var b strings.Builder
	for _, c := range d.Changes {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	if d.Omitted > 0 {
		fmt.Fprintf(&b, "... and %d more changes of the schemas\n", d.Omitted)
	}
	return b.String()
}

// FieldNewTool is the first change of a diff from a [NewToolPin]: the
// tool itself is new.
const FieldNewTool = "new tool"

// Compare returns what changed from old to new. Neither is modified. It
// never fails: a field that does not decode is compared as raw JSON. From
// a [NewToolPin], the diff is New and starts with FieldNewTool; caution is
// compared with the defaults a client assumes of a tool that says nothing.
func Compare(old, new *Definition) *Diff {
	d := &Diff{Changes: []Change{}}
	if old.Fingerprint() != "" && old.Fingerprint() == new.Fingerprint() {
		return d
	}
	if d.New = old.NewTool(); d.New {
		d.Changes = append(d.Changes, Change{Field: FieldNewTool, Old: "(absent)", New: quoteText(new.Name) + " (first listed after its server's first listing)"})
	}
	cautionChanges(d, old, new)
	if old.Name != new.Name {
		d.Changes = append(d.Changes, Change{Field: "name", Old: quoteText(old.Name), New: quoteText(new.Name)})
	}
	if old.Title != new.Title {
		d.Changes = append(d.Changes, Change{Field: "title", Old: quoteText(old.Title), New: quoteText(new.Title)})
	}
	if old.Description != new.Description {
		d.Changes = append(d.Changes, Change{Field: "description", Lines: lineDiff(old.Description, new.Description)})
	}
	for _, s := range []struct {
		field    string
		old, new json.RawMessage
	}{{"inputSchema", old.InputSchema, new.InputSchema}, {"outputSchema", old.OutputSchema, new.OutputSchema}} {
		if !sameJSON(s.old, s.new) {
			jsonDiff(d, s.field, decode(s.old), decode(s.new))
		}
	}
	d.Class = Unchanged
	for _, c := range d.Changes {
		switch {
		case c.Caution == CautionRemoved:
			d.Class = RemovesCaution
		case c.Caution == CautionNone && d.Class < Other:
			d.Class = Other
		case c.Caution == CautionAdded && d.Class < AddsCaution:
			d.Class = AddsCaution
		}
	}
	if d.Omitted > 0 && d.Class < Other {
		d.Class = Other
	}
	if d.Class == Unchanged && old.Fingerprint() != new.Fingerprint() {
		// Unreachable unless a field outside those compared differs.
		d.Changes = append(d.Changes, Change{Field: "(definition)", Old: old.Fingerprint(), New: new.Fingerprint()})
		d.Class = Other
	}
	return d
}

// effective reads the annotations and policy hints of d as a client
// without a resolution takes them (policy.Evaluate), and whether d is
// marked resolvable. Values that do not decode count as absent.
func effective(d *Definition) (policy.Effective, bool, map[string]json.RawMessage) {
	var ann *mcp.ToolAnnotations
	if len(d.Annotations) > 0 {
		var a mcp.ToolAnnotations
		if json.Unmarshal(d.Annotations, &a) == nil {
			ann = &a
		}
	}
	var meta map[string]any
	var raw map[string]json.RawMessage
	if len(d.Meta) > 0 {
		_ = json.Unmarshal(d.Meta, &meta)
		_ = json.Unmarshal(d.Meta, &raw)
	}
	h, _ := hints.Read(meta) // invalid hints count as absent, as the policy takes them
	return policy.Evaluate(policy.Input{Static: ann, StaticHints: h}), preflight.IsResolvable(&mcp.Tool{Meta: meta}), raw
}

// cautionChanges adds the changes of annotations and policy hints, each
// with its direction.
func cautionChanges(d *Diff, old, new *Definition) {
	oe, ores, ometa := effective(old)
	ne, nres, nmeta := effective(new)
	before := len(d.Changes)

	// cautious is the value that asks for more care: false for
	// readOnlyHint and idempotency, true for the others.
	flag := func(field string, o, n policy.Value[bool], cautious, always bool) {
		if o.Value == n.Value {
			return
		}
		if !always && o.Source != policy.SourceStatic && n.Source != policy.SourceStatic {
			return // both derived from annotations, whose change is listed
		}
		c := Change{Field: field, Old: valueText(o.Value, o.Source), New: valueText(n.Value, n.Source), Caution: CautionRemoved}
		if n.Value == cautious {
			c.Caution = CautionAdded
		}
		d.Changes = append(d.Changes, c)
	}
	flag("annotations.readOnlyHint", oe.ReadOnly, ne.ReadOnly, false, true)
	flag("annotations.destructiveHint", oe.Destructive, ne.Destructive, true, true)
	flag("annotations.idempotentHint", oe.Idempotent, ne.Idempotent, false, true)
	flag("annotations.openWorldHint", oe.OpenWorld, ne.OpenWorld, true, true)
	if ot, nt := annTitle(old), annTitle(new); ot != nt {
		d.Changes = append(d.Changes, Change{Field: "annotations.title", Old: quoteText(ot), New: quoteText(nt)})
	}
	// Annotations spelled differently with the same values (an absent
	// destructiveHint and an explicit true) still change the fingerprint.
	if len(d.Changes) == before && !sameJSON(old.Annotations, new.Annotations) {
		d.Changes = append(d.Changes, Change{Field: "annotations", Old: rawText(old.Annotations), New: rawText(new.Annotations)})
	}

	if o, n := oe.Effect, ne.Effect; o.Value != n.Value && (o.Source == policy.SourceStatic || n.Source == policy.SourceStatic) {
		c := Change{Field: "_meta." + preflight.MetaEffect, Old: valueText(o.Value, o.Source), New: valueText(n.Value, n.Source), Caution: CautionAdded}
		if n.Value.Rank() < o.Value.Rank() {
			c.Caution = CautionRemoved
		}
		d.Changes = append(d.Changes, c)
	}
	flag("_meta."+preflight.MetaIdempotent, oe.IdempotentCall, ne.IdempotentCall, false, false)
	flag("_meta."+preflight.MetaRequiresConfirmation, oe.RequiresConfirmation, ne.RequiresConfirmation, true, false)
	if o, n := oe.ResultSensitivity, ne.ResultSensitivity; o.Value != n.Value {
		c := Change{Field: "_meta." + preflight.MetaResultSensitivity, Old: valueText(o.Value, o.Source), New: valueText(n.Value, n.Source), Caution: CautionAdded}
		if n.Value.Rank() < o.Value.Rank() {
			c.Caution = CautionRemoved // less sensitive, or no longer said: less redaction
		}
		d.Changes = append(d.Changes, c)
	}
	if ores != nres {
		c := Change{Field: "_meta." + preflight.ExtensionToolResolution, Old: resolvableText(ores), New: resolvableText(nres), Caution: CautionAdded}
		if nres {
			c.Caution = CautionRemoved // a resolution may lift confirmation call by call
		}
		d.Changes = append(d.Changes, c)
	}

	// Every other difference of the pinned _meta keys (the policy-hints
	// object, security schemes, a hint spelled out with its derived value,
	// values that do not decode), as JSON.
	listed := map[string]bool{}
	for _, c := range d.Changes[before:] {
		listed[c.Field] = true
	}
	keys := map[string]bool{}
	for k := range ometa {
		keys[k] = true
	}
	for k := range nmeta {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		if o, n := ometa[k], nmeta[k]; !listed[metaField(k)] && !sameJSON(o, n) {
			d.Changes = append(d.Changes, Change{Field: metaField(k), Old: rawText(o), New: rawText(n)})
		}
	}
}

func annTitle(d *Definition) string {
	var a struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(d.Annotations, &a)
	return a.Title
}

func valueText(v any, src policy.Source) string {
	s := fmt.Sprint(v)
	if s == "" {
		s = "(absent)"
	}
	switch src {
	case policy.SourceDefault:
		if s != "(absent)" {
			s += " (default)"
		}
	case policy.SourceDerived:
		s += " (derived)"
	}
	return s
}

func resolvableText(b bool) string {
	if b {
		return "resolvable"
	}
	return "(absent)"
}

// sameJSON reports whether a and b are the same JSON value, by their
// canonical digests; absent equals absent only.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	da, err1 := requeststate.ArgumentsDigest(a)
	db, err2 := requeststate.ArgumentsDigest(b)
	return err1 == nil && err2 == nil && da == db
}

// absent marks a missing value in a JSON diff.
type absentValue struct{}

var absent any = absentValue{}

func decode(raw json.RawMessage) any {
	if len(raw) == 0 {
		return absent
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw) // compared as text
	}
	return v
}

// jsonDiff adds the differences of a and b below path, leaves first in
// document order, at most maxChanges in all.
func jsonDiff(d *Diff, path string, a, b any) {
	add := func(c Change) {
		if len(d.Changes) >= maxChanges {
			d.Omitted++
			return
		}
		d.Changes = append(d.Changes, c)
	}
	if len(path) > maxPath {
		if !equalJSON(a, b) {
			add(Change{Field: path, Old: jsonText(a), New: jsonText(b)})
		}
		return
	}
	am, aObj := a.(map[string]any)
	bm, bObj := b.(map[string]any)
	if aObj && bObj {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			av, ok := am[k]
			if !ok {
				av = absent
			}
			bv, ok := bm[k]
			if !ok {
				bv = absent
			}
			jsonDiff(d, path+keyPath(k), av, bv)
		}
		return
	}
	as, aArr := a.([]any)
	bs, bArr := b.([]any)
	if aArr && bArr && len(as) == len(bs) {
		for i := range as {
			jsonDiff(d, path+"["+strconv.Itoa(i)+"]", as[i], bs[i])
		}
		return
	}
	if !equalJSON(a, b) {
		add(Change{Field: path, Old: jsonText(a), New: jsonText(b)})
	}
}

// equalJSON compares decoded JSON values, numbers by value.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		x, err1 := requeststate.ArgumentsDigest(json.RawMessage(a))
		y, err2 := requeststate.ArgumentsDigest(json.RawMessage(b))
		return err1 == nil && err2 == nil && x == y
	}
	return a == b
}

// metaField is the field of a _meta key: _meta.mcp.dev/effect, or
// _meta["..."] for a key with other characters than those of the
// extension keys.
func metaField(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/-", r)) {
			return "_meta[" + quoteText(k) + "]"
		}
	}
	if k == "" || len(k) > maxValue {
		return "_meta[" + quoteText(k) + "]"
	}
	return "_meta." + k
}

// keyPath writes an object key as a path step: .key for plain keys,
// ["key"] for others.
func keyPath(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '$' || r == '/' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			plain = false
			break
		}
	}
	if plain && len(k) <= maxValue {
		return "." + k
	}
	return "[" + quoteText(k) + "]"
}

func jsonText(v any) string {
	switch v := v.(type) {
	case absentValue:
		return "(absent)"
	case string:
		return quoteText(v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return clean(string(data), maxValue)
}

func rawText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(absent)"
	}
	return clean(string(raw), maxValue)
}

// quoteText writes server text as a quoted, bounded string with control
// and format characters escaped.
func quoteText(s string) string { return `"` + clean(s, maxValue) + `"` }

// lineDiff returns the changed lines of two texts: "- " removed, "+ "
// added, in order, at most maxLines, each bounded and cleaned.
func lineDiff(a, b string) []string {
	al, bl := splitLines(a), splitLines(b)
	// Common prefix and suffix are unchanged.
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	s := 0
	for s < len(al)-p && s < len(bl)-p && al[len(al)-1-s] == bl[len(bl)-1-s] {
		s++
	}
	am, bm := al[p:len(al)-s], bl[p:len(bl)-s]
	var ops []string
	if len(am)*len(bm) <= maxLCSCells {
		ops = lcsDiff(am, bm)
	} else {
		for _, l := range am {
			ops = append(ops, "- "+l)
		}
		for _, l := range bm {
			ops = append(ops, "+ "+l)
		}
	}
	out := make([]string, 0, min(len(ops), maxLines)+1)
	for i, op := range ops {
		if i == maxLines {
			out = append(out, fmt.Sprintf("... and %d more changed lines", len(ops)-maxLines))
			break
		}
		out = append(out, op[:2]+clean(op[2:], maxLineRunes))
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
}

// lcsDiff is the line diff of a and b by their longest common
// subsequence; len(a)*len(b) is bounded by the caller.
func lcsDiff(a, b []string) []string {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	cells := make([]int32, (n+1)*(m+1))
	for i := range l {
		l[i] = cells[i*(m+1) : (i+1)*(m+1)]
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}

// clean returns s cut to max runes and safe to print on a terminal, with
// every control and format character visible ([text.Escape]).
func clean(s string, max int) string { return text.Escape(text.ClipRunes(s, max)) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
