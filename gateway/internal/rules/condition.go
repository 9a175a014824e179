package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// The variables a [Condition] reads besides a rule's.
const (
	varEffect = "effect"
	varFlow   = "flow"
)

// conditionEnv is the rules' environment with the call's effect and flow
// added.
var conditionEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	return env.Extend(cel.Variable(varEffect, cel.StringType), cel.Variable(varFlow, cel.MapType(cel.StringType, cel.DynType)))
})

// Condition is a boolean CEL expression over one call, in the rules'
// environment (args, tool, server, principal) plus effect, the call's
// effective mcp.dev/effect ("read", "write", "external", "delete"), and
// flow: flow.carries (bool: the arguments carry a value the client read
// from another call), flow.from (list of the exposed tool names or URIs it
// was read from) and flow.callsAgo (int: how many calls ago).
// The gateway's decision rules use it. It is compiled once and safe for
// concurrent use.
type Condition struct {
	prg       cel.Program
	readsArgs bool
	readsFlow bool
	args      []string
}

// CompileCondition compiles expr, which must be of type bool. costLimit
// bounds one evaluation (zero means [DefaultCostLimit]).
func CompileCondition(expr string, costLimit uint64) (*Condition, error) {
	if costLimit == 0 {
		costLimit = DefaultCostLimit
	}
	if len(expr) > MaxExpressionBytes {
		return nil, fmt.Errorf("the expression is %d bytes, more than %d", len(expr), MaxExpressionBytes)
	}
	env, err := conditionEnv()
	if err != nil {
		return nil, err
	}
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("expression does not compile:\n%v", iss.Err())
	}
	if !a.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("expression is of type %s, not bool (compare a value explicitly, e.g. args.x == true)", a.OutputType())
	}
	var c compiled
	if err := c.collect(a.NativeRep().Expr()); err != nil {
		return nil, err
	}
	prg, err := env.Program(a, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(costLimit))
	if err != nil {
		return nil, fmt.Errorf("expression cannot be planned: %v", err)
	}
	return &Condition{prg: prg, readsArgs: c.readsArgs, readsFlow: c.readsFlow, args: c.refs}, nil
}

// ReadsArgs reports whether the expression reads the call's arguments, so
// that a caller decodes them only then.
func (c *Condition) ReadsArgs() bool { return c.readsArgs }

// ReadsFlow reports whether the expression reads flow, and so decides
// what a call that carries a value read elsewhere gets.
func (c *Condition) ReadsFlow() bool { return c.readsFlow }

// Args names the arguments the expression reads by name, in order, once
// each.
func (c *Condition) Args() []string { return c.args }

// Vars are the values a [Condition] reads.
type Vars struct {
	Server, Tool, Principal, Effect string
	// Args are the decoded arguments (see [DecodeArguments]); nil means
	// none.
	Args map[string]any
	// FlowFrom names where the values the call carries were read (exposed
	// tool names or URIs); empty when it carries none. FlowCallsAgo is
	// how many calls ago.
	FlowFrom     []string
	FlowCallsAgo int64
}

// Eval reports whether the call matches. An error (an argument the
// expression reads is missing, the cost limit is reached) means neither.
func (c *Condition) Eval(v Vars) (bool, error) {
	act := &condActivation{v: v}
	if c.readsArgs {
		args := v.Args
		if args == nil {
			args = map[string]any{}
		}
		act.args = types.NewStringInterfaceMap(types.DefaultTypeAdapter, args)
	} else {
		act.args = emptyArgs
	}
	out, _, err := c.prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, errors.New("the expression did not give a bool")
	}
	return b, nil
}

// emptyArgs stands for the arguments of an expression that does not read
// them.
var emptyArgs = types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{})

type condActivation struct {
	v    Vars
	args ref.Val
}

func (a *condActivation) ResolveName(name string) (any, bool) {
	switch name {
	case varArgs:
		return a.args, true
	case varTool:
		return types.String(a.v.Tool), true
	case varServer:
		return types.String(a.v.Server), true
	case varPrincipal:
		return types.String(a.v.Principal), true
	case varEffect:
		return types.String(a.v.Effect), true
	case varFlow:
		from := a.v.FlowFrom
		if from == nil {
			from = []string{}
		}
		return types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{
			"carries": len(a.v.FlowFrom) > 0, "from": from, "callsAgo": a.v.FlowCallsAgo}), true
	}
	return nil, false
}

func (a *condActivation) Parent() interpreter.Activation { return nil }

// DecodeArguments decodes a call's arguments as the rules do, as untrusted
// input: a JSON object (empty and null mean none) of at most maxBytes
// (zero means [DefaultMaxArgumentBytes]) and bounded nesting, in which no
// object repeats a key.
func DecodeArguments(raw json.RawMessage, maxBytes int) (map[string]any, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxArgumentBytes
	}
	return (&Rules{maxArgs: maxBytes}).decode(raw)
}

// CheckArguments checks arguments decoded already, by a reader that refuses
// repeated keys, against the limits the rules read within: at most
// maxBytes (zero means [DefaultMaxArgumentBytes]) and bounded nesting.
func CheckArguments(raw json.RawMessage, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxArgumentBytes
	}
	return (&Rules{maxArgs: maxBytes}).bounded(raw)
}
