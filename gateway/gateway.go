// Package gateway fronts many upstream MCP servers with one MCP endpoint.
// Every client request enters once (package entry: one strict reading,
// ambiguity refused), becomes one Call that crosses one chain of named
// stages (packages call and stage), and leaves through a forwarder
// (package forward) in whichever protocol era each side speaks; the
// upstreams are supervised connections (package upstream) whose listings
// are aggregated (package catalog).
//
// Build one with [New] from [Options], start its upstreams with
// [Gateway.Start], serve it with [Gateway.Serve] (streamable HTTP at /mcp,
// both eras on one URL, /healthz and the Prometheus /metrics) or
// [Gateway.ServeStdio], and stop it with [Gateway.Close].
package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/metrics"
	"github.com/preflightmcp/preflight/gateway/internal/mirror"
	"github.com/preflightmcp/preflight/gateway/internal/signin"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/resolve"
)

// Gateway is an MCP server in front of upstream servers.
type Gateway struct {
	opts    Options
	logger  *slog.Logger
	server  *mcp.Server
	rs      *resolve.Server
	forward *forward.Forward
	chain   *call.Chain
	signIn  *signin.Manager // nil: no upstream signs in with OAuth
	stages  []call.Stage    // of chain, outermost first
	entry   *entry.Entry
	decider *stage.Decider   // nil when decisions are off
	pins    *pinChecks       // nil when pinning is off
	metrics *metrics.Metrics // nil when off

	// ups is the set of upstreams the next rebuild aggregates; the
	// snapshot in state holds the set it was built from, which routes
	// calls. Reload replaces both; retiring holds the upstreams a reload
	// removed or replaced until their calls in flight end.
	ups       atomic.Pointer[upstreamSet]
	resolvers swapResolver
	reloadMu  sync.Mutex                 // one Reload at a time
	retiring  map[*upstream.Conn]*member // under mu

	state    atomic.Pointer[snapshot]
	rebuildC chan struct{}
	announce atomic.Uint32  // upstream.ListKinds to announce at the next rebuild
	mirror   *mirror.Mirror // the SDK server's registry (rebuild goroutine only)

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every rebuild
	started  bool
	stopping bool
	cancel   context.CancelFunc
	runCtx   context.Context // the upstreams' context, from Start
	wg       sync.WaitGroup

	anonymous *auth.Authenticator
	ui        http.Handler
	pageURL   atomic.Pointer[string]
	ownState  *state.Store // made by New when Options.State is nil
	stores    *storeProbe

	disclosure *disclosure // nil when it is off
}

// snapshot is the catalog the gateway serves at one moment, with the raw
// JSON of each listed item ready to send. It is immutable.
type snapshot struct {
	set       *upstreamSet // the upstreams the view was built from
	view      *catalog.View
	version   uint64
	upstreams map[string]*catalog.Listing
	tools     []toolJSON
	prompts   []json.RawMessage
	resources []json.RawMessage
	templates []json.RawMessage
	problems  []catalog.Problem // including items the SDK server refused
}

// resolver is the resolver of the next calls.
func (g *Gateway) resolver() stage.Resolver { return g.resolvers.get() }

// View implements stage.Directory: the current aggregated catalog.
func (g *Gateway) View() *catalog.View { return g.state.Load().view }

// Upstream implements stage.Directory: the upstream of that name in
// the set the current catalog was built from.
func (g *Gateway) Upstream(name string) (*upstream.Conn, bool) {
	m, ok := g.state.Load().set.byName[name]
	if !ok {
		return nil, false
	}
	return m.conn, true
}

// PageURL returns the page's root URL (Options.Page.URL, or the one Serve
// derived from its listener), "" before it is known or when the page is
// off.
func (g *Gateway) PageURL() string {
	if u := g.pageURL.Load(); u != nil {
		return *u
	}
	return ""
}

// viewHas reports whether the current view was built with upstream's
// listing, in the current set of upstreams.
func (g *Gateway) viewHas(name string) bool {
	snap := g.state.Load()
	_, ok := snap.upstreams[name]
	return ok && snap.set == g.ups.Load()
}

// broadcast wakes the waiters on Changed; g.mu must be held.
func (g *Gateway) broadcast() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change of the gateway's
// catalog or state.
func (g *Gateway) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}
