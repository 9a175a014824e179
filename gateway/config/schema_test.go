package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// loadSchema returns the embedded schema and its validator.
func loadSchema(t testing.TB) (*jsonschema.Schema, *jsonschema.Resolved) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if s.ID != SchemaURL {
		t.Errorf("$id %q, SchemaURL %q", s.ID, SchemaURL)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &s, rs
}

// TestSchemaMatchesTypes walks the Go types and the schema together:
// every key of one is a key of the other, with the same kind of value
// and the same allowed values.
func TestSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	root, _ := loadSchema(t)
	deref := func(s *jsonschema.Schema) *jsonschema.Schema {
		if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
			if d := root.Defs[name]; d != nil {
				return d
			}
			t.Fatalf("no $defs/%s", name)
		}
		return s
	}
	isFalse := func(s *jsonschema.Schema) bool {
		return s != nil && reflect.DeepEqual(s, &jsonschema.Schema{Not: &jsonschema.Schema{}})
	}
	used := map[*jsonschema.Schema]bool{}

	var check func(typ reflect.Type, s *jsonschema.Schema, path string, text bool)
	check = func(typ reflect.Type, s *jsonschema.Schema, path string, text bool) {
		if s == nil {
			t.Errorf("%s: no schema", path)
			return
		}
		s = deref(s)
		used[s] = true
		if typ.Kind() == reflect.Pointer && typ != boolPtrType {
			typ = typ.Elem()
		}
		switch {
		case typ == durationType:
			if s != root.Defs["duration"] {
				t.Errorf("%s: a duration, not $defs/duration", path)
			}
		case typ.Kind() == reflect.Int:
			if s.Type != "integer" {
				t.Errorf("%s: schema type %q, want integer", path, s.Type)
			}
		case typ.Kind() == reflect.Float64:
			if s.Type != "number" {
				t.Errorf("%s: schema type %q, want number", path, s.Type)
			}
		case typ == packType:
			if len(s.AnyOf) != 2 || s.AnyOf[0].Type != "boolean" || len(s.AnyOf[1].Enum) == 0 {
				t.Errorf("%s: a pack is true, false or one of the shipped packs' names", path)
			}
		case typ == boolPtrType || typ.Kind() == reflect.Bool:
			if s.Type != "boolean" {
				t.Errorf("%s: schema type %q, want boolean", path, s.Type)
			}
		case typ.Kind() == reflect.String:
			switch vals := allowed(typ); {
			case vals != nil:
				var enum []string
				for _, v := range s.Enum {
					enum = append(enum, v.(string))
				}
				if !slices.Equal(enum, vals) {
					t.Errorf("%s: schema enum %v, Go %v", path, enum, vals)
				}
			case text:
				if s != root.Defs["text"] {
					t.Errorf("%s: read as text, not $defs/text", path)
				}
			case s.Type != "string":
				t.Errorf("%s: schema type %q, want string", path, s.Type)
			}
		case typ.Kind() == reflect.Slice:
			if s.Type != "array" {
				t.Errorf("%s: schema type %q, want array", path, s.Type)
			}
			check(typ.Elem(), s.Items, path+"[]", text)
		case typ.Kind() == reflect.Map:
			if s.Type != "object" {
				t.Errorf("%s: schema type %q, want object", path, s.Type)
			}
			check(typ.Elem(), s.AdditionalProperties, path+".*", text)
		case typ.Kind() == reflect.Struct:
			if s.Type != "object" || !isFalse(s.AdditionalProperties) {
				t.Errorf("%s: schema type %q, additionalProperties %v: want a closed object", path, s.Type, s.AdditionalProperties)
			}
			fs := fields(typ)
			var props []string
			for name := range s.Properties {
				props = append(props, name)
			}
			slices.Sort(props)
			if got := names(fs); !slices.Equal(got, props) {
				t.Errorf("%s: Go keys %v, schema keys %v", path, got, props)
			}
			for _, f := range fs {
				if p := s.Properties[f.name]; p != nil {
					check(typ.Field(f.index).Type, p, join(path, f.name), f.text)
				}
			}
		default:
			t.Errorf("%s: no check for %v", path, typ)
		}
	}
	check(reflect.TypeFor[Config](), root, "", false)
	for name, d := range root.Defs {
		if !used[d] {
			t.Errorf("$defs/%s is not used by any Go field", name)
		}
	}
}

// toAny returns a file's content as JSON values, as an editor checks it:
// before ${...} is replaced.
func toAny(n *node) any {
	switch n.kind {
	case mapNode:
		m := map[string]any{}
		for _, p := range n.pairs {
			m[p.key.text] = toAny(p.val)
		}
		return m
	case seqNode:
		out := []any{}
		for _, item := range n.items {
			out = append(out, toAny(item))
		}
		return out
	case scalarNode:
		switch n.tag {
		case "bool":
			return n.text == "true" || n.text == "True" || n.text == "TRUE"
		case "int", "float":
			f, err := strconv.ParseFloat(n.text, 64)
			if err != nil {
				return n.text
			}
			return f
		}
		return n.text
	}
	return nil
}

// readAny reads a file's content as JSON values.
func readAny(t testing.TB, name string, data []byte) any {
	t.Helper()
	errs := &errList{file: name}
	var n *node
	if isJSON(name, data) {
		n = readJSON(data, errs)
	} else {
		n = readYAML(data, errs)
	}
	if n == nil {
		t.Fatalf("%s: %v", name, errs.err())
	}
	return toAny(n)
}

// TestSchemaValidatesExamples checks every example, the goldens (which
// are Marshal's output) and the YAML of docs/config.md against the schema
// with a real validator, and that Parse accepts them too.
func TestSchemaValidatesExamples(t *testing.T) {
	t.Parallel()
	_, rs := loadSchema(t)
	examples, _ := filepath.Glob(filepath.Join("testdata", "examples", "*.yaml"))
	goldens, _ := filepath.Glob(filepath.Join("testdata", "clients", "*.golden.yaml"))
	if len(examples) < 2 || len(goldens) != len(clientFiles) {
		t.Fatalf("examples %v, goldens %v", examples, goldens)
	}
	docs := docExamples(t)
	if len(docs) < 3 {
		t.Fatalf("%d YAML examples in docs/config.md", len(docs))
	}
	files := map[string][]byte{}
	for _, f := range append(examples, goldens...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = data
	}
	for i, d := range docs {
		files["docs/config.md example "+strconv.Itoa(i+1)+".yaml"] = d
	}
	for name, data := range files {
		if err := rs.Validate(readAny(t, name, data)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", name, err)
		}
		if _, err := Parse("/abs/"+name, data, testEnv); err != nil {
			t.Errorf("%s: Parse refuses it: %v", name, err)
		}
	}
}

// docExamples returns the ```yaml blocks of docs/config.md that are
// whole config files (those with a servers key).
func docExamples(t *testing.T) [][]byte {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var cur *bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && line == "```yaml":
			cur = &bytes.Buffer{}
		case cur != nil && line == "```":
			if regexp.MustCompile(`(?m)^servers:`).Match(cur.Bytes()) {
				out = append(out, cur.Bytes())
			}
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// TestSchemaOnBadFiles checks what the schema makes of the bad canonical
// files: it refuses those it can tell, and accepts those only the gateway
// can (unset variables, relations between values). A schema that accepted
// everything would fail here.
func TestSchemaOnBadFiles(t *testing.T) {
	t.Parallel()
	_, rs := loadSchema(t)
	for _, tc := range badFiles {
		if tc.schema == schemaNA {
			continue
		}
		name := filepath.Join("testdata", "bad", tc.file)
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		err = rs.Validate(readAny(t, name, data))
		if tc.schema == schemaRejects && err == nil {
			t.Errorf("%s: the schema accepts it", tc.file)
		}
		if tc.schema == schemaAccepts && err != nil {
			t.Errorf("%s: the schema refuses it (%v); mark it schemaRejects", tc.file, err)
		}
	}
}

// TestDurationPattern checks that the schema's duration pattern and the
// parser agree.
func TestDurationPattern(t *testing.T) {
	t.Parallel()
	root, _ := loadSchema(t)
	re := regexp.MustCompile(root.Defs["duration"].Pattern)
	for _, s := range []string{"1s", "500ms", "1.5h", ".5s", "1.s", "1h30m", "2m3s4ms", "10us", "10µs", "10μs", "3ns",
		"", "30", "s", "1d", "+1s", "-1s", "1 s", "1e3s", "1s ", "1..5s"} {
		_, err := parseDuration(s)
		if parsed, matched := err == nil, re.MatchString(s); parsed != matched {
			t.Errorf("%q: parsed %v, matches the schema %v", s, parsed, matched)
		}
	}
}

func TestSchemaIsACopy(t *testing.T) {
	t.Parallel()
	a := Schema()
	a[0] = 'x'
	if Schema()[0] != '{' {
		t.Error("Schema returned the embedded bytes")
	}
}
