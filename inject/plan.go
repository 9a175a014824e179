package inject

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A plan is the checked resolver graph of one tool.
type plan struct {
	tool   string
	order  []*node // dependencies first
	params []input // the tool's resolved parameters
	// injectedArgs are the JSON names of the tool's resolved parameters,
	// removed from the arguments a client sends.
	injectedArgs []string
}

// A node is one resolver in a tool's graph.
type node struct {
	r      *Resolver
	key    string // wire key
	inputs []input
	deps   []*node
}

// An input is a struct field filled from a tool argument or a resolver.
type input struct {
	index  int
	name   string // the Go field name, for messages
	arg    string // the tool argument, or ""
	dep    *node  // the resolver, or nil
	unwrap bool   // dep gives an Elicited[T]; the field is a T
}

// buildPlan checks the resolvers a tool's input struct asks for.
func buildPlan(tool string, toolIn reflect.Type, args map[string]bool, resolvers []*Resolver) (*plan, error) {
	byName := make(map[string]*Resolver, len(resolvers))
	for _, r := range resolvers {
		if r == nil {
			return nil, fmt.Errorf("nil resolver")
		}
		if other, dup := byName[r.name]; dup && other != r {
			return nil, fmt.Errorf("two different resolvers are named %q: names are wire keys and must be unique within a tool", r.name)
		}
		byName[r.name] = r
	}
	p := &plan{tool: tool}
	nodes := map[*Resolver]*node{}

	var visit func(r *Resolver, stack []string) (*node, error)
	visit = func(r *Resolver, stack []string) (*node, error) {
		if slices.Contains(stack, r.name) {
			return nil, fmt.Errorf("resolver %q has a cyclic dependency: %s -> %s", r.name, strings.Join(stack, " -> "), r.name)
		}
		if n, ok := nodes[r]; ok {
			return n, nil
		}
		n := &node{r: r, key: r.name}
		stack = append(stack, r.name)
		for i := range r.in.NumField() {
			f := r.in.Field(i)
			where := fmt.Sprintf("resolver %q, input %s", r.name, f.Name)
			argName, hasArg := f.Tag.Lookup("arg")
			depName, hasDep := f.Tag.Lookup("inject")
			switch {
			case !f.IsExported():
				return nil, fmt.Errorf("%s: the field is unexported; inputs must be exported", where)
			case hasArg && hasDep:
				return nil, fmt.Errorf("%s: tagged both arg and inject; give one source", where)
			case hasArg:
				if !args[argName] {
					return nil, fmt.Errorf("%s: takes argument %q, which tool %q does not have (arguments: %s)", where, argName, tool, strings.Join(sortedKeys(args), ", "))
				}
				n.inputs = append(n.inputs, input{index: i, name: f.Name, arg: argName})
			case hasDep:
				in, err := dependency(where, f, depName, byName, stack, visit)
				if err != nil {
					return nil, err
				}
				in.index = i
				n.inputs = append(n.inputs, in)
				n.deps = append(n.deps, in.dep)
			default:
				return nil, fmt.Errorf(`%s: no source: tag it arg:"NAME" for a tool argument or inject:"NAME" for another resolver's value`, where)
			}
		}
		nodes[r] = n
		p.order = append(p.order, n) // after its dependencies
		return n, nil
	}

	for i := range toolIn.NumField() {
		f := toolIn.Field(i)
		depName, ok := f.Tag.Lookup("inject")
		if !ok {
			continue
		}
		where := fmt.Sprintf("tool %q, parameter %s", tool, f.Name)
		if !f.IsExported() {
			return nil, fmt.Errorf("%s: the field is unexported; resolved parameters must be exported", where)
		}
		in, err := dependency(where, f, depName, byName, nil, visit)
		if err != nil {
			return nil, err
		}
		in.index = i
		p.params = append(p.params, in)
		p.injectedArgs = append(p.injectedArgs, jsonName(f))
	}
	if len(p.params) == 0 {
		return nil, fmt.Errorf("tool %q has no resolved parameters: tag a field of its input struct inject:\"NAME\", or add it with mcp.AddTool", tool)
	}
	for _, r := range resolvers {
		if _, used := nodes[r]; !used {
			return nil, fmt.Errorf("resolver %q was given but nothing in tool %q uses it", r.name, tool)
		}
	}
	return p, nil
}

// dependency checks a field that takes the value of resolver depName.
func dependency(where string, f reflect.StructField, depName string, byName map[string]*Resolver, stack []string,
	visit func(*Resolver, []string) (*node, error)) (input, error) {
	dep, ok := byName[depName]
	if !ok {
		return input{}, fmt.Errorf("%s: takes resolver %q, which was not given (given: %s)", where, depName, strings.Join(sortedKeys(byName), ", "))
	}
	n, err := visit(dep, stack)
	if err != nil {
		return input{}, err
	}
	in := input{name: f.Name, dep: n}
	switch {
	case dep.out == f.Type:
	case unwrapsTo(dep.out, f.Type):
		in.unwrap = true
	default:
		return input{}, fmt.Errorf("%s: is a %v, but resolver %q gives a %v", where, f.Type, depName, dep.out)
	}
	return in, nil
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name
	}
	return f.Name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
