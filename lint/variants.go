package lint

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// DefaultMaxVariants bounds the argument variants probed per tool.
const DefaultMaxVariants = 32

// placeholder is the string lint sends for a free-form string argument.
const placeholder = "preflight-lint"

// absent marks an optional argument left out of a variant.
type absentValue struct{}

var absent = absentValue{}

// Arguments are argument variants enumerated from a tool's input schema.
type Arguments struct {
	// Valid are complete arguments that pass the input schema: every
	// combination of the enumerable arguments' values (enums, consts,
	// booleans, examples and defaults, and "absent" for optional ones),
	// free-form required arguments filled with a placeholder that fits
	// their type. Labels name each variant by its enumerated values.
	Valid  []map[string]any
	Labels []string
	// Invalid are arguments that break the schema, one per way lint knows
	// (a value outside an enum, a wrong type, a missing required
	// argument, an argument the schema forbids), each with its Kind.
	Invalid []map[string]any
	Kinds   []string
	// Enumerated names the arguments whose values vary.
	Enumerated []string
	// Capped reports that the combinations exceeded the limit: lint then
	// varies one argument at a time from a base variant.
	Capped bool
	// Skipped counts generated arguments that failed local validation.
	Skipped int
}

// Enumerate returns the argument variants of an input schema (raw JSON
// Schema, as listed), at most max valid ones (max <= 0 means
// [DefaultMaxVariants]). Generated arguments are validated locally against
// the schema when it can be compiled; valid ones that fail and invalid
// ones that pass are dropped.
func Enumerate(schema any, max int) *Arguments {
	if max <= 0 {
		max = DefaultMaxVariants
	}
	s, _ := schema.(map[string]any)
	validate := compile(s)
	props, _ := s["properties"].(map[string]any)
	required := stringSet(s["required"])
	names := slices.Sorted(maps.Keys(props))

	base := map[string]any{}
	type axis struct {
		name   string
		values []any
	}
	var axes []axis
	for _, name := range names {
		ps, _ := props[name].(map[string]any)
		vals, enumerable := enumerable(ps)
		switch {
		case enumerable:
			if !required[name] {
				vals = append(vals, absent)
			}
			axes = append(axes, axis{name, vals})
		case required[name]:
			base[name] = fill(ps, 0)
		}
	}
	// Required arguments without a schema of their own.
	for name := range required {
		if _, ok := props[name]; !ok {
			base[name] = placeholder
		}
	}

	out := &Arguments{}
	for _, a := range axes {
		out.Enumerated = append(out.Enumerated, a.name)
	}
	make1 := func(choice []int) (map[string]any, string) {
		args := maps.Clone(base)
		var label []string
		for i, a := range axes {
			v := a.values[choice[i]]
			if v == absent {
				continue
			}
			args[a.name] = v
			label = append(label, a.name+"="+valueText(v))
		}
		return args, strings.Join(label, " ")
	}
	add := func(choice []int) {
		args, label := make1(choice)
		if validate != nil && validate(args) != nil {
			out.Skipped++
			return
		}
		if len(out.Valid) >= max {
			out.Capped = true
			return
		}
		out.Valid = append(out.Valid, args)
		out.Labels = append(out.Labels, label)
	}

	total := 1
	for _, a := range axes {
		total *= len(a.values)
		if total > max {
			break
		}
	}
	choice := make([]int, len(axes))
	if total <= max {
		for {
			add(choice)
			i := len(axes) - 1
			for ; i >= 0; i-- {
				choice[i]++
				if choice[i] < len(axes[i].values) {
					break
				}
				choice[i] = 0
			}
			if i < 0 {
				break
			}
		}
	} else {
		// One argument at a time from the base variant (every axis at its
		// first value).
		out.Capped = true
		add(choice)
		for i, a := range axes {
			for j := 1; j < len(a.values); j++ {
				c := make([]int, len(axes))
				c[i] = j
				add(c)
			}
		}
	}

	// Invalid arguments, from the first valid variant (or the base).
	from := base
	if len(out.Valid) > 0 {
		from = out.Valid[0]
	}
	addInvalid := func(kind string, args map[string]any) {
		if validate != nil && validate(args) == nil {
			return // not invalid after all
		}
		out.Invalid = append(out.Invalid, args)
		out.Kinds = append(out.Kinds, kind)
	}
	if name, ps := firstProp(names, props, required, func(ps map[string]any) bool { return len(anySlice(ps["enum"])) > 0 }); name != "" {
		args := maps.Clone(from)
		args[name] = outsideEnum(anySlice(ps["enum"]))
		addInvalid("enum: "+name+" outside its enum", args)
	}
	if name, ps := firstProp(names, props, required, func(ps map[string]any) bool { return schemaType(ps) != "" }); name != "" {
		args := maps.Clone(from)
		args[name] = wrongType(schemaType(ps))
		addInvalid(fmt.Sprintf("type: %s is not a %s", name, schemaType(ps)), args)
	}
	if req := slices.Sorted(maps.Keys(required)); len(req) > 0 {
		args := maps.Clone(from)
		delete(args, req[0])
		addInvalid("required: "+req[0]+" missing", args)
	}
	if s["additionalProperties"] == false {
		args := maps.Clone(from)
		args["preflight_lint_unexpected"] = true
		addInvalid("additionalProperties: an argument the schema does not declare", args)
	}
	return out
}

// compile returns a validator for schema, or nil if it cannot be compiled.
func compile(schema map[string]any) func(map[string]any) error {
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return func(args map[string]any) error {
		// Validate what travels: the arguments after a JSON round trip.
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		return rs.Validate(v)
	}
}

// enumerable returns the values of a property that lint enumerates: its
// const, its enum, true and false for a boolean, its examples and default.
func enumerable(s map[string]any) ([]any, bool) {
	if s == nil {
		return nil, false
	}
	if c, ok := s["const"]; ok {
		return []any{c}, true
	}
	if e := anySlice(s["enum"]); len(e) > 0 {
		return slices.Clone(e), true
	}
	if schemaType(s) == "boolean" {
		return []any{true, false}, true
	}
	var vals []any
	for _, v := range anySlice(s["examples"]) {
		vals = appendUnique(vals, v)
	}
	if len(vals) > 0 {
		if d, ok := s["default"]; ok {
			vals = appendUnique(vals, d)
		}
		return vals, true
	}
	return nil, false
}

// fill returns a value that fits s: its default, its first example, or a
// placeholder of its type.
func fill(s map[string]any, depth int) any {
	if s == nil {
		return placeholder
	}
	if d, ok := s["default"]; ok {
		return d
	}
	if ex := anySlice(s["examples"]); len(ex) > 0 {
		return ex[0]
	}
	if vals, ok := enumerable(s); ok {
		return vals[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, alt := range anySlice(s[k]) {
			if m, ok := alt.(map[string]any); ok && schemaType(m) != "null" {
				return fill(m, depth)
			}
		}
	}
	switch schemaType(s) {
	case "string":
		return fillString(s)
	case "integer", "number":
		n := 1.0
		if v, ok := s["minimum"].(float64); ok {
			n = v
		}
		if v, ok := s["exclusiveMinimum"].(float64); ok {
			n = v + 1
		}
		if v, ok := s["maximum"].(float64); ok && n > v {
			n = v
		}
		if schemaType(s) == "integer" {
			return int64(n)
		}
		return n
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		n := 0
		if v, ok := s["minItems"].(float64); ok {
			n = int(v)
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, n)
		for range n {
			out = append(out, fill(items, depth+1))
		}
		return out
	case "object":
		out := map[string]any{}
		if depth >= 4 {
			return out
		}
		props, _ := s["properties"].(map[string]any)
		for name := range stringSet(s["required"]) {
			ps, _ := props[name].(map[string]any)
			out[name] = fill(ps, depth+1)
		}
		return out
	}
	return placeholder
}

func fillString(s map[string]any) string {
	switch s["format"] {
	case "date-time":
		return "2026-01-01T00:00:00Z"
	case "date":
		return "2026-01-01"
	case "time":
		return "00:00:00Z"
	case "uri", "url", "uri-reference", "iri":
		return "https://example.com/preflight-lint"
	case "email":
		return "preflight-lint@example.com"
	case "uuid":
		return "00000000-0000-4000-8000-000000000000"
	case "ipv4":
		return "192.0.2.1"
	case "hostname":
		return "example.com"
	}
	v := placeholder
	if n, ok := s["minLength"].(float64); ok {
		for len(v) < int(n) {
			v += "-" + placeholder
		}
	}
	if n, ok := s["maxLength"].(float64); ok && len(v) > int(n) {
		v = v[:int(n)]
	}
	return v
}

// schemaType is the schema's type; the first non-null one of a list.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
	}
	return ""
}

// firstProp returns the first property matching ok, required ones first.
func firstProp(names []string, props map[string]any, required map[string]bool, ok func(map[string]any) bool) (string, map[string]any) {
	for _, wantRequired := range []bool{true, false} {
		for _, n := range names {
			ps, _ := props[n].(map[string]any)
			if required[n] == wantRequired && ps != nil && ok(ps) {
				return n, ps
			}
		}
	}
	return "", nil
}

func outsideEnum(enum []any) any {
	v := "preflight-lint-not-in-enum"
	for slices.ContainsFunc(enum, func(e any) bool { return e == v }) {
		v += "-x"
	}
	return v
}

func wrongType(t string) any {
	switch t {
	case "string":
		return 12345
	case "boolean":
		return "not-a-boolean"
	case "integer":
		return "not-an-integer"
	case "number":
		return "not-a-number"
	case "array":
		return "not-an-array"
	case "object":
		return "not-an-object"
	}
	return map[string]any{"unexpected": true}
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func stringSet(v any) map[string]bool {
	out := map[string]bool{}
	for _, x := range anySlice(v) {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}

func appendUnique(vals []any, v any) []any {
	key := valueText(v)
	for _, x := range vals {
		if valueText(x) == key {
			return vals
		}
	}
	return append(vals, v)
}

// valueText is a value as a label shows it: strings bare, the rest JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
