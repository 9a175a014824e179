package call

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Handler serves a call: it returns the result's JSON (an object) as the
// client gets it, or an error (a *jsonrpc.Error is sent as it is).
type Handler interface {
	Serve(ctx context.Context, c *Call) (json.RawMessage, error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, c *Call) (json.RawMessage, error)

// Serve calls f.
func (f HandlerFunc) Serve(ctx context.Context, c *Call) (json.RawMessage, error) { return f(ctx, c) }

// Stage is one named step of the chain: it does its part of the call and
// calls next to go on, or returns to end the call there. A stage that
// changes results changes what next returns, so no forwarder can skip it.
type Stage interface {
	// Name names the stage in the chain's order, logs and traces.
	Name() string
	// Serve does the stage's part.
	Serve(ctx context.Context, c *Call, next Handler) (json.RawMessage, error)
}

// Scoped is a Stage that applies to some methods only; a stage that is
// not Scoped applies to all.
type Scoped interface {
	Methods() []string
}

// Chain is the stages compiled once, for each method, in front of the
// method's final handler.
type Chain struct {
	byMethod map[string]Handler
	order    map[string][]string
}

// Compile builds the chain: for each method of finals, the stages that
// apply to it, the first outermost, then its final handler. It panics if
// two stages have one name (a programming error).
func Compile(finals map[string]Handler, stages ...Stage) *Chain {
	return CompileTraced(nil, finals, stages...)
}

// CompileTraced is [Compile] with a span for each call (named after its
// method, a child of the trace its request names) and one for each stage
// it crosses, from tracer; a nil tracer traces nothing and costs nothing.
func CompileTraced(tracer trace.Tracer, finals map[string]Handler, stages ...Stage) *Chain {
	seen := map[string]bool{}
	for _, s := range stages {
		if seen[s.Name()] {
			panic(fmt.Sprintf("call: two stages named %q", s.Name()))
		}
		seen[s.Name()] = true
	}
	ch := &Chain{byMethod: map[string]Handler{}, order: map[string][]string{}}
	for method, final := range finals {
		h := final
		var names []string
		for i := len(stages) - 1; i >= 0; i-- {
			s := stages[i]
			if sc, ok := s.(Scoped); ok && !slices.Contains(sc.Methods(), method) {
				continue
			}
			if tracer != nil {
				h = &tracedLink{tracer: tracer, link: link{stage: s, next: h}}
			} else {
				h = &link{stage: s, next: h}
			}
			names = append(names, s.Name())
		}
		slices.Reverse(names)
		if tracer != nil {
			h = &traced{tracer: tracer, next: h}
		}
		ch.byMethod[method], ch.order[method] = h, names
	}
	return ch
}

// Serve sends c down its method's chain.
func (ch *Chain) Serve(ctx context.Context, c *Call) (json.RawMessage, error) {
	h, ok := ch.byMethod[c.Method]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not routed", c.Method)}
	}
	return h.Serve(ctx, c)
}

// Order returns the names of the stages a call of method crosses,
// outermost first.
func (ch *Chain) Order(method string) []string { return slices.Clone(ch.order[method]) }

// link is one stage with what follows it.
type link struct {
	stage Stage
	next  Handler
}

func (l *link) Serve(ctx context.Context, c *Call) (json.RawMessage, error) {
	return l.stage.Serve(ctx, c, l.next)
}
