package rules

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"github.com/preflightmcp/preflight/hints"
)

// The variables a rule expression reads.
const (
	varArgs      = "args"
	varTool      = "tool"
	varServer    = "server"
	varPrincipal = "principal"
)

// celEnv is the CEL environment every rule is compiled in, made once: an
// environment is immutable and safe for concurrent use.
var celEnv = sync.OnceValues(newEnv)

func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varArgs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varPrincipal, cel.StringType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		cleanPathFunction(),
		cel.ParserExpressionSizeLimit(MaxExpressionBytes),
		cel.ParserRecursionLimit(64),
	)
}

// compiled is a rule ready to evaluate.
type compiled struct {
	Rule
	tools     map[string]bool // nil: every tool
	prg       cel.Program     // nil: always matches
	hints     hints.Hints
	refs      []string     // arguments the expression names, in order, once each
	lits      []comparison // arguments compared with literal values
	readsArgs bool         // the expression reads args at all
	readsFlow bool         // the expression reads flow (decision rules)
}

// comparison is an argument compared with (or defaulted to) a literal.
type comparison struct {
	arg     string
	value   any  // string, int64, uint64, float64, bool or nil
	typed   bool // only the type is checked (a default), not the enum
	operand string
}

func compileRule(env *cel.Env, server string, r Rule, costLimit uint64) (*compiled, error) {
	c := &compiled{Rule: r}
	c.Tools = slices.Clone(r.Tools)
	if len(r.Tools) > 0 {
		c.tools = make(map[string]bool, len(r.Tools))
		for _, t := range r.Tools {
			c.tools[t] = true
		}
	}
	c.hints, _ = r.Hints.hints() // validated before
	if r.When == "" {
		return c, nil
	}
	fail := func(err error) (*compiled, error) { return nil, &Error{Server: server, Rule: r.Name, Err: err} }
	a, iss := env.Compile(r.When)
	if iss.Err() != nil {
		return fail(fmt.Errorf("expression does not compile:\n%v", iss.Err()))
	}
	if !a.OutputType().IsExactType(cel.BoolType) {
		return fail(fmt.Errorf("expression is of type %s, not bool (compare a value explicitly, e.g. args.x == true)", a.OutputType()))
	}
	if err := c.collect(a.NativeRep().Expr()); err != nil {
		return fail(err)
	}
	if c.readsArgs && len(r.Tools) == 0 {
		return fail(errors.New("the expression reads args but the rule names no tools: list the tools whose arguments it reads"))
	}
	prg, err := env.Program(a, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(costLimit))
	if err != nil {
		return fail(fmt.Errorf("expression cannot be planned: %v", err))
	}
	c.prg = prg
	return c, nil
}

// collect records the arguments e reads and compares with literals.
func (c *compiled) collect(e ast.Expr) error {
	switch e.Kind() {
	case ast.IdentKind:
		switch e.AsIdent() {
		case varArgs:
			c.readsArgs = true // read as a whole: nothing to check by name
		case varFlow:
			c.readsFlow = true
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if isArgs(s.Operand()) {
			c.ref(s.FieldName())
			return nil
		}
		return c.collect(s.Operand())
	case ast.CallKind:
		return c.collectCall(e.AsCall())
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		for _, v := range []string{comp.IterVar(), comp.IterVar2(), comp.AccuVar()} {
			if v == varArgs {
				return fmt.Errorf("a macro binds the name %q, which hides the call's arguments: use another name", varArgs)
			}
		}
		for _, sub := range []ast.Expr{comp.IterRange(), comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			if err := c.collect(sub); err != nil {
				return err
			}
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			if err := c.collect(el); err != nil {
				return err
			}
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			if err := c.collect(m.Key()); err != nil {
				return err
			}
			if err := c.collect(m.Value()); err != nil {
				return err
			}
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if err := c.collect(f.AsStructField().Value()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *compiled) collectCall(call ast.CallExpr) error {
	args := call.Args()
	fn := call.FunctionName()
	switch {
	case (fn == operators.Index || fn == operators.OptIndex || fn == operators.OptSelect) && len(args) == 2 && isArgs(args[0]):
		if name, ok := stringLiteral(args[1]); ok {
			c.ref(name)
			return nil
		}
	case fn == operators.In && len(args) == 2 && isArgs(args[1]):
		if name, ok := stringLiteral(args[0]); ok {
			c.ref(name) // 'x' in args
			return nil
		}
	case fn == operators.Equals || fn == operators.NotEquals:
		if len(args) == 2 {
			c.compare(args[0], args[1], fn)
			c.compare(args[1], args[0], fn)
		}
	case fn == operators.In && len(args) == 2:
		if name, ok := argOperand(args[0]); ok && args[1].Kind() == ast.ListKind {
			for _, el := range args[1].AsList().Elements() {
				if v, ok := literal(el); ok {
					c.lits = append(c.lits, comparison{arg: name, value: v, operand: "in"})
				}
			}
		}
	case fn == "orValue" && call.IsMemberFunction() && len(args) == 1:
		if name, ok := optionalArg(call.Target()); ok {
			if v, ok := literal(args[0]); ok {
				c.lits = append(c.lits, comparison{arg: name, value: v, typed: true, operand: "orValue"})
			}
		}
	}
	if call.IsMemberFunction() {
		if err := c.collect(call.Target()); err != nil {
			return err
		}
	}
	for _, a := range args {
		if err := c.collect(a); err != nil {
			return err
		}
	}
	return nil
}

func (c *compiled) compare(side, other ast.Expr, fn string) {
	name, ok := argOperand(side)
	if !ok {
		return
	}
	if v, ok := literal(other); ok {
		op := "=="
		if fn == operators.NotEquals {
			op = "!="
		}
		c.lits = append(c.lits, comparison{arg: name, value: v, operand: op})
	}
}

func (c *compiled) ref(name string) {
	c.readsArgs = true
	if !slices.Contains(c.refs, name) {
		c.refs = append(c.refs, name)
	}
}

func isArgs(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == varArgs }

// argOperand reports the argument e reads directly: args.x, args['x'],
// or args.?x.orValue(v).
func argOperand(e ast.Expr) (string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		if !s.IsTestOnly() && isArgs(s.Operand()) {
			return s.FieldName(), true
		}
	case ast.CallKind:
		call := e.AsCall()
		args := call.Args()
		if call.FunctionName() == operators.Index && len(args) == 2 && isArgs(args[0]) {
			return stringLiteral(args[1])
		}
		if call.FunctionName() == "orValue" && call.IsMemberFunction() {
			return optionalArg(call.Target())
		}
	}
	return "", false
}

// optionalArg reports the argument of args.?x or args[?'x'].
func optionalArg(e ast.Expr) (string, bool) {
	if e.Kind() != ast.CallKind {
		return "", false
	}
	call := e.AsCall()
	args := call.Args()
	if (call.FunctionName() == operators.OptSelect || call.FunctionName() == operators.OptIndex) && len(args) == 2 && isArgs(args[0]) {
		return stringLiteral(args[1])
	}
	return "", false
}

func stringLiteral(e ast.Expr) (string, bool) {
	v, ok := literal(e)
	s, isString := v.(string)
	return s, ok && isString
}

// literal returns the Go value of a literal expression.
func literal(e ast.Expr) (any, bool) {
	if e.Kind() != ast.LiteralKind {
		return nil, false
	}
	switch v := e.AsLiteral().(type) {
	case types.String:
		return string(v), true
	case types.Bool:
		return bool(v), true
	case types.Int:
		return int64(v), true
	case types.Uint:
		return uint64(v), true
	case types.Double:
		return float64(v), true
	case types.Null:
		return nil, true
	}
	return nil, false
}
