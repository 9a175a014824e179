package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/hints"
)

// decoder fills Go values from nodes, strictly: an unknown key, a
// duplicate key or a value of the wrong kind is a problem reported with
// its key path, and decoding goes on to find the others. It records the
// node of every path it decodes, for validation's positions and to know
// what a file set.
type decoder struct {
	errs   *errList
	vars   *vars
	seen   map[string]*node
	failed map[string]bool // paths with a problem
}

func newDecoder(errs *errList, v *vars) *decoder {
	return &decoder{errs: errs, vars: v, seen: map[string]*node{}, failed: map[string]bool{}}
}

// at returns the position of path, or of its nearest decoded parent.
func (d *decoder) at(path string) pos {
	for {
		if n, ok := d.seen[path]; ok {
			return n.pos
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			if n, ok := d.seen[""]; ok {
				return n.pos
			}
			return pos{}
		}
		path = path[:i]
	}
}

// set reports whether the file gave path a value other than null.
func (d *decoder) set(path string) bool {
	n, ok := d.seen[path]
	return ok && n.kind != nullNode
}

func (d *decoder) fail(n *node, path, format string, args ...any) {
	d.failed[path] = true
	d.errs.add(n.pos, path, format, args...)
}

// related reports whether a problem was already found at path, above it
// or below it, so that validation does not pile a second one on it.
func (d *decoder) related(path string) bool {
	for f := range d.failed {
		if f == path || within(f, path) || within(path, f) {
			return true
		}
	}
	return false
}

// within reports whether path is below parent.
func within(path, parent string) bool {
	if parent == "" {
		return true
	}
	return strings.HasPrefix(path, parent) && len(path) > len(parent) && (path[len(parent)] == '.' || path[len(parent)] == '[')
}

var (
	durationType = reflect.TypeFor[Duration]()
	boolPtrType  = reflect.TypeFor[*bool]()
	floatPtrType = reflect.TypeFor[*float64]()
	packType     = reflect.TypeFor[Pack]()
)

// pack reads a Pack: true, false or a pack's name.
func (d *decoder) pack(n *node, path string, v reflect.Value) {
	const want = "true, false or the name of a rules pack shipped with the gateway (such as github)"
	if n.kind == scalarNode && (n.tag == "bool" || n.subst && (n.text == "true" || n.text == "false")) {
		var b bool
		if d.bool(n, path, &b) {
			v.SetString(string(map[bool]Pack{true: PackAuto, false: PackOff}[b]))
		}
		return
	}
	s, ok := d.scalar(n, path, want)
	if !ok {
		return
	}
	if s == "" || len(s) > maxName || strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') }) >= 0 {
		d.fail(n, path, "%s is not a pack's name: want %s", quote(s), want)
		return
	}
	v.SetString(s)
}

// allowed returns the values an enumerated string type may take, or nil
// for a free string.
func allowed(t reflect.Type) []string {
	var vals []string
	switch t {
	case reflect.TypeFor[Transport]():
		vals = []string{string(TransportStdio), string(TransportHTTP), string(TransportSSE)}
	case reflect.TypeFor[Connect]():
		vals = []string{string(ConnectEager), string(ConnectLazy)}
	case reflect.TypeFor[ServerAuth]():
		vals = []string{string(ServerAuthOAuth)}
	case reflect.TypeFor[Trust]():
		vals = []string{string(Trusted), string(Untrusted)}
	case reflect.TypeFor[Pin]():
		vals = []string{string(PinStrict), string(PinWarn), string(PinOff)}
	case clientTransportType:
		vals = []string{string(TransportStdio), string(TransportHTTP), string(TransportSSE), "streamable-http", "streamableHttp"}
	case reflect.TypeFor[DecisionMode]():
		vals = []string{string(DecisionsEnforce), string(DecisionsDryRun)}
	case reflect.TypeFor[FlowAction]():
		vals = []string{string(FlowConfirm), string(FlowDeny), string(FlowOff)}
	case reflect.TypeFor[ServerFlow]():
		vals = []string{string(ServerFlowOn), string(ServerFlowOff), string(ServerFlowStrict)}
	case reflect.TypeFor[Verdict]():
		vals = []string{string(VerdictAllow), string(VerdictConfirm), string(VerdictDeny)}
	case reflect.TypeFor[Approval]():
		vals = []string{string(ApprovalInBand), string(ApprovalHuman)}
	case reflect.TypeFor[Store]():
		vals = []string{string(StoreMemory), string(StoreRedis)}
	case reflect.TypeFor[ApprovalStore]():
		vals = []string{string(ApprovalsMemory), string(ApprovalsSQLite), string(ApprovalsPostgres)}
	case reflect.TypeFor[PinStore]():
		vals = []string{string(PinStoreSQLite), string(PinStorePostgres)}
	case reflect.TypeFor[Algorithm]():
		for _, a := range algorithms {
			vals = append(vals, string(a))
		}
	case reflect.TypeFor[AuditStore]():
		vals = []string{string(AuditSQLite), string(AuditPostgres), string(AuditOff)}
	case reflect.TypeFor[AuditLevel]():
		vals = []string{string(AuditLevelOff), string(AuditLevelSummary), string(AuditLevelFull)}
	case reflect.TypeFor[AuditFailure]():
		vals = []string{string(AuditProceed), string(AuditFailClosed)}
	case reflect.TypeFor[RedactionLevel]():
		vals = redactionLevels()
	case reflect.TypeFor[RedactionKind]():
		for _, k := range redactionKinds {
			vals = append(vals, string(k))
		}
	case reflect.TypeFor[hints.Effect]():
		for _, e := range hints.Effects {
			vals = append(vals, string(e))
		}
	case reflect.TypeFor[hints.Sensitivity]():
		for _, s := range hints.Sensitivities {
			vals = append(vals, string(s))
		}
	}
	return vals
}

// where says which kind of entry an unknown key was found in, for the
// formats of editors, whose keys differ from the canonical ones.
func where(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[clientServer]():
		return " in an mcpServers entry"
	case reflect.TypeFor[vscodeServer]():
		return " in a VS Code server"
	}
	return ""
}

// field is one key of a struct, from its json tag.
type field struct {
	name  string
	index int
	text  bool // `config:"text"`: scalars of any type are read as text
}

func fields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, field{name: name, index: i, text: f.Tag.Get("config") == "text"})
	}
	return out
}

func names(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	slices.Sort(out)
	return out
}

// decode fills v from n. text says that scalars of any type are read as
// their text (args, env and header values, where YAML users write
// numbers unquoted).
func (d *decoder) decode(n *node, path string, v reflect.Value, text bool) {
	if d.errs.full() {
		return
	}
	d.seen[path] = n
	t := v.Type()
	if t == ignoredType {
		return
	}
	if n.kind == scalarNode && n.tag == "str" && !n.subst {
		s, changed, err := d.vars.expand(n.text)
		if err != nil {
			d.fail(n, path, "%s", err)
			return
		}
		if changed {
			n.text, n.subst = s, true
		}
	}
	switch {
	case t == durationType:
		if s, ok := d.scalar(n, path, "a duration such as 30s or 5m"); ok {
			dur, err := parseDuration(s)
			if err != nil {
				d.fail(n, path, "%s", err)
				return
			}
			v.SetInt(int64(dur))
		}
	case t == packType:
		d.pack(n, path, v)
	case t == boolPtrType:
		var b bool
		if d.bool(n, path, &b) {
			v.Set(reflect.ValueOf(&b))
		}
	case t == floatPtrType:
		if n.kind != scalarNode || (n.tag != "int" && n.tag != "float" && !n.subst) {
			d.fail(n, path, "expected a number, found %s", n.describe())
			return
		}
		f, err := strconv.ParseFloat(n.text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(n, path, "%s is not a number", quote(n.text))
			return
		}
		v.Set(reflect.ValueOf(&f))
	case t.Kind() == reflect.Int:
		if n.kind != scalarNode || (n.tag != "int" && !n.subst) {
			d.fail(n, path, "expected a whole number, found %s", n.describe())
			return
		}
		i, err := strconv.Atoi(n.text)
		if err != nil || i < 0 {
			d.fail(n, path, "%s is not a whole number from 0", quote(n.text))
			return
		}
		v.SetInt(int64(i))
	case t.Kind() == reflect.Bool:
		var b bool
		if d.bool(n, path, &b) {
			v.SetBool(b)
		}
	case t.Kind() == reflect.String:
		vals := allowed(t)
		want := "a string"
		if vals != nil {
			want = "one of " + list(vals)
		}
		var s string
		var ok bool
		if text && n.kind == scalarNode {
			s, ok = n.text, true
		} else {
			s, ok = d.scalar(n, path, want)
		}
		if !ok {
			return
		}
		if vals != nil && !slices.Contains(vals, s) {
			d.fail(n, path, "%s is not allowed (allowed: %s)", quote(s), list(vals))
			return
		}
		v.SetString(s)
	case t.Kind() == reflect.Slice:
		if n.kind == nullNode {
			return
		}
		if n.kind != seqNode {
			d.fail(n, path, "expected a list, found %s", n.describe())
			return
		}
		s := reflect.MakeSlice(t, len(n.items), len(n.items))
		for i, item := range n.items {
			d.decode(item, index(path, i), s.Index(i), text)
		}
		v.Set(s)
	case t.Kind() == reflect.Map:
		if n.kind == nullNode {
			return
		}
		if n.kind != mapNode {
			d.fail(n, path, "expected a mapping, found %s", n.describe())
			return
		}
		m := reflect.MakeMapWithSize(t, len(n.pairs))
		first := map[string]*node{}
		for _, p := range n.pairs {
			kp := join(path, p.key.text)
			if prev, dup := first[p.key.text]; dup {
				d.fail(p.key, kp, "duplicate key (first at line %d)", d.errs.resolve(prev.pos).line)
				continue
			}
			first[p.key.text] = p.key
			elem := reflect.New(t.Elem()).Elem()
			if t.Elem().Kind() == reflect.Pointer {
				elem.Set(reflect.New(t.Elem().Elem()))
				d.decode(p.val, kp, elem.Elem(), text)
			} else {
				d.decode(p.val, kp, elem, text)
			}
			m.SetMapIndex(reflect.ValueOf(p.key.text).Convert(t.Key()), elem)
		}
		v.Set(m)
	case t.Kind() == reflect.Struct:
		if n.kind == nullNode {
			return
		}
		if n.kind != mapNode {
			d.fail(n, path, "expected a mapping, found %s", n.describe())
			return
		}
		fs := fields(t)
		first := map[string]*node{}
		for _, p := range n.pairs {
			kp := join(path, p.key.text)
			i := slices.IndexFunc(fs, func(f field) bool { return f.name == p.key.text })
			if i < 0 {
				d.fail(p.key, kp, "unknown key%s (allowed%s: %s)", suggest(p.key.text, names(fs)), where(t), list(names(fs)))
				continue
			}
			if prev, dup := first[p.key.text]; dup {
				d.fail(p.key, kp, "duplicate key (first at line %d)", d.errs.resolve(prev.pos).line)
				continue
			}
			first[p.key.text] = p.key
			d.decode(p.val, kp, v.Field(fs[i].index), fs[i].text)
		}
	default:
		panic(fmt.Sprintf("config: no decoder for %v", t)) // a programming error, caught by the tests
	}
}

// scalar returns the text of a string scalar.
func (d *decoder) scalar(n *node, path, want string) (string, bool) {
	if n.kind != scalarNode || n.tag != "str" {
		d.fail(n, path, "expected %s, found %s", want, n.describe())
		return "", false
	}
	return n.text, true
}

// bool reads true or false; text interpolated from the environment may
// spell them too.
func (d *decoder) bool(n *node, path string, b *bool) bool {
	if n.kind == scalarNode && (n.tag == "bool" || n.subst) {
		switch n.text {
		case "true", "True", "TRUE":
			*b = true
			return true
		case "false", "False", "FALSE":
			*b = false
			return true
		}
	}
	d.fail(n, path, "expected true or false, found %s", n.describe())
	return false
}

// parseDuration reads a positive duration with units.
func parseDuration(s string) (time.Duration, error) {
	dur, err := time.ParseDuration(s)
	if err != nil || dur <= 0 || s[0] == '+' {
		return 0, fmt.Errorf("%s is not a positive duration (write a number with a unit: 500ms, 30s, 5m, 1h)", quote(s))
	}
	return dur, nil
}

// suggest returns ", did you mean X?" when one allowed key is close to
// key.
func suggest(key string, keys []string) string {
	best, bestDist := "", 3
	for _, k := range keys {
		if d := distance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" || len(key) < 3 {
		return ""
	}
	return ", did you mean " + best + "?"
}

// distance is the Levenshtein distance of a and b, bounded for long keys.
func distance(a, b string) int {
	if len(a) > maxQuoted || len(b) > maxQuoted {
		return maxQuoted
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
