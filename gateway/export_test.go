package gateway

import (
	"slices"

	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// InsertStage puts s into g's chain before the stage named before (at the
// end when there is none), for tests that need a stage the gateway's
// options do not make. Call it before serving.
func InsertStage(g *Gateway, before string, s call.Stage) {
	i := slices.IndexFunc(g.stages, func(st call.Stage) bool { return st.Name() == before })
	if i < 0 {
		i = len(g.stages)
	}
	g.stages = slices.Insert(g.stages, i, s)
	*g.chain = *call.Compile(g.forward.Finals(), g.stages...)
}

// ChainOrder returns the stages a call of method crosses in g's chain,
// outermost first.
func ChainOrder(g *Gateway, method string) []string { return g.chain.Order(method) }
