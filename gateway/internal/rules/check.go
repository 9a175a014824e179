package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaOf returns a tool's input schema as a JSON object.
func schemaOf(t *mcp.Tool) (map[string]any, error) {
	switch s := t.InputSchema.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return s, nil
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	return m, nil
}

// check reports the ways c does not fit a tool's input schema: arguments
// the schema does not define, and comparisons with values outside an
// argument's enum or of another type.
func (c *compiled) check(server, tool string, schema map[string]any) error {
	props, _ := schema["properties"].(map[string]any)
	var errs []error
	fail := func(arg string, err error) {
		errs = append(errs, &Error{Server: server, Rule: c.Name, Tool: tool, Argument: arg, Err: err})
	}
	for _, name := range c.refs {
		if _, ok := props[name].(map[string]any); !ok {
			fail(name, fmt.Errorf("the tool's input schema has no such argument (arguments: %s)", argumentNames(props)))
		}
	}
	for _, l := range c.lits {
		prop, ok := props[l.arg].(map[string]any)
		if !ok {
			continue // reported above
		}
		if ts := schemaTypes(prop); len(ts) > 0 && !slices.ContainsFunc(ts, func(t string) bool { return fits(l.value, t) }) {
			fail(l.arg, fmt.Errorf("%s %s, %s, but the argument's type is %s", verb(l), render(l.value), kind(l.value), strings.Join(ts, " or ")))
			continue
		}
		if enum, ok := prop["enum"].([]any); ok && !l.typed && !slices.ContainsFunc(enum, func(v any) bool { return sameValue(v, l.value) }) {
			fail(l.arg, fmt.Errorf("%s %s, which is not one of its values (enum: %s)", verb(l), render(l.value), renderList(enum)))
		}
	}
	return errors.Join(errs...)
}

func verb(l comparison) string {
	if l.operand == "orValue" {
		return "defaults to"
	}
	return "compared (" + l.operand + ") with"
}

func argumentNames(props map[string]any) string {
	if len(props) == 0 {
		return "none"
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// schemaTypes returns the JSON Schema types a property allows; nil when
// it does not say (anyOf, $ref, no type).
func schemaTypes(prop map[string]any) []string {
	switch t := prop["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// fits reports whether a literal is a value of JSON Schema type t.
func fits(v any, t string) bool {
	switch v := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case int64, uint64:
		return t == "number" || t == "integer"
	case float64:
		return t == "number" || t == "integer" && v == math.Trunc(v)
	case nil:
		return t == "null"
	}
	return false
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, uint64, float64:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

// sameValue compares a JSON enum value with a CEL literal.
func sameValue(enum, lit any) bool {
	switch e := enum.(type) {
	case float64:
		switch l := lit.(type) {
		case int64:
			return e == float64(l)
		case uint64:
			return e == float64(l)
		case float64:
			return e == l
		}
		return false
	case json.Number:
		f, err := e.Float64()
		return err == nil && sameValue(f, lit)
	}
	return enum == lit
}

func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func renderList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = render(v)
	}
	return strings.Join(parts, ", ")
}
