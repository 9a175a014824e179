// Package gateway fronts many upstream MCP servers with one MCP endpoint:
// it connects to each upstream (package upstream), aggregates what they
// serve (package catalog), passes every call through a chain of named
// stages (package pipeline) whose last one forwards it in whichever protocol
// era each side speaks (package bridge), and serves tools/resolve for every
// aggregated tool (package resolve, through a [pipeline.Resolver]).
//
// Build one with [New] from [Options], start its upstreams with
// [Gateway.Start], serve it with [Gateway.Serve] (streamable HTTP at /mcp,
// both eras on one URL, and /healthz) or [Gateway.ServeStdio], and stop it
// with [Gateway.Close].
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/bridge"
	"github.com/preflightmcp/preflight/gateway/catalog"
	"github.com/preflightmcp/preflight/gateway/pipeline"
	"github.com/preflightmcp/preflight/gateway/upstream"
	"github.com/preflightmcp/preflight/requeststate"
	"github.com/preflightmcp/preflight/resolve"
)

// Defaults of [Options].
const (
	DefaultName          = "preflight-gateway"
	DefaultShutdownGrace = 30 * time.Second
	DefaultPageSize      = 1000
	DefaultSessionIdle   = 30 * time.Minute
)

// Options configure a [Gateway]. Zero fields mean defaults.
type Options struct {
	// Name and Version identify the gateway to clients (serverInfo) and to
	// upstreams (clientInfo); Name is also the audience of its sealed
	// requestState. Empty Name means DefaultName.
	Name, Version string
	// Instructions are sent to clients in initialize and server/discover.
	Instructions string
	// Upstreams are the servers behind the gateway, in the order their
	// items are listed. Names must be unique.
	Upstreams []UpstreamSpec
	// Logger receives the gateway's log, one record per call included. Nil
	// discards it.
	Logger *slog.Logger
	// Resolver works out what each call of an aggregated tool will do, for
	// tools/resolve and before every tools/call. Nil means
	// pipeline.UpstreamOrStatic (the upstream's own tools/resolve within
	// its static bounds, else the static annotations).
	Resolver pipeline.Resolver
	// Ring seals the requestState the gateway gives clients. Nil means a
	// random key for this process (replicas need a shared ring).
	Ring *requeststate.Ring
	// Parking holds legacy upstreams' calls that wait for a 2026-07-28
	// client's answers. Nil means in-process, with bridge's defaults.
	Parking bridge.Parking
	// MaxRounds bounds the questions of one call. Zero means
	// bridge.DefaultMaxRounds.
	MaxRounds int
	// ShutdownGrace bounds how long Serve waits for calls in flight when
	// it stops. Zero means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// PageSize is the number of items per page of the lists the gateway
	// serves. Zero means DefaultPageSize.
	PageSize int
	// SessionIdle closes a legacy (2025-11-25) client's session after it
	// has sent nothing for this long. Zero means DefaultSessionIdle.
	SessionIdle time.Duration
	// Disclosure turns on progressive disclosure of tool descriptions for
	// some or all upstreams. Nil means off.
	Disclosure *Disclosure
}

// UpstreamSpec describes one upstream server and how its names are exposed.
type UpstreamSpec struct {
	// Name identifies the upstream; it is the default prefix of its names.
	Name string
	// Transport is "stdio", "http" or "sse"; empty means stdio with a
	// Command, streamable HTTP with a URL.
	Transport string
	// Command, Args, Env, Dir: a server started over stdio.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL, Headers, BearerTokenEnv: a server over HTTP.
	URL            string
	Headers        map[string]string
	BearerTokenEnv string
	// Connect, if set, supplies the transport (an in-process server, a
	// custom transport) instead of the fields above.
	Connect func(ctx context.Context) (mcp.Transport, error)
	// Era pins the protocol era ("2026-07-28" or "2025-11-25"); empty
	// probes server/discover and falls back to initialize.
	Era string
	// Lazy connects on first use instead of at start.
	Lazy bool
	// Prefix and Separator form the exposed names (prefix + separator +
	// name) when the gateway has more than one upstream; empty means the
	// upstream's Name and "__".
	Prefix, Separator string
	// Include and Exclude filter the upstream's tools and prompts by name
	// (path.Match patterns); Exclude wins.
	Include, Exclude []string
	// Timeouts and restart back-off; zero means package upstream's
	// defaults.
	ConnectTimeout, ProbeTimeout, CallTimeout, StopGrace time.Duration
	Restart                                              upstream.Restart
}

func (u UpstreamSpec) spec() upstream.Spec {
	return upstream.Spec{
		Name: u.Name, Transport: u.Transport,
		Command: u.Command, Args: u.Args, Env: u.Env, Dir: u.Dir,
		URL: u.URL, Headers: u.Headers, BearerTokenEnv: u.BearerTokenEnv,
		Connect: u.Connect, Era: u.Era, Lazy: u.Lazy,
		ConnectTimeout: u.ConnectTimeout, ProbeTimeout: u.ProbeTimeout, CallTimeout: u.CallTimeout,
		StopGrace: u.StopGrace, Restart: u.Restart,
	}
}

func (u UpstreamSpec) naming() catalog.Naming {
	return catalog.Naming{Prefix: u.Prefix, Separator: u.Separator, Include: u.Include, Exclude: u.Exclude}
}

// Gateway is an MCP server in front of upstream servers.
type Gateway struct {
	opts     Options
	logger   *slog.Logger
	server   *mcp.Server
	rs       *resolve.Server
	resolver pipeline.Resolver
	forward  *bridge.Forward
	chain    pipeline.Handler

	conns  []*upstream.Conn
	byName map[string]*upstream.Conn
	multi  bool // more than one upstream: names are prefixed

	state    atomic.Pointer[snapshot]
	rebuildC chan struct{}
	announce atomic.Uint32 // upstream.ListKinds to announce at the next rebuild
	mirror   mirror        // what is registered with the SDK server (rebuild goroutine only)

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every rebuild
	started  bool
	stopping bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	subs subscriptions

	checked sessionChecks // legacy sessions whose calls may pass through

	// Progressive disclosure; disclosure is nil when it is off.
	disclosure                         *disclose.Server
	discloseLevel                      disclose.SchemaLevel
	discloseResource, discloseTemplate json.RawMessage
}

// New builds a gateway; it connects nothing until [Gateway.Start].
func New(opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = defaultVersion()
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Upstreams) == 0 {
		return nil, errors.New("gateway: no upstreams")
	}
	g := &Gateway{
		opts:     o,
		logger:   logger,
		byName:   map[string]*upstream.Conn{},
		multi:    len(o.Upstreams) > 1,
		rebuildC: make(chan struct{}, 1),
		changed:  make(chan struct{}),
		resolver: o.Resolver,
	}
	if g.resolver == nil {
		g.resolver = pipeline.UpstreamOrStatic{Logger: logger}
	}
	g.subs.init()
	info := &mcp.Implementation{Name: o.Name, Version: o.Version}
	for _, u := range o.Upstreams {
		if _, dup := g.byName[u.Name]; dup {
			return nil, fmt.Errorf("gateway: two upstreams named %q", u.Name)
		}
		c, err := upstream.New(u.spec(), &upstream.Options{
			Logger:            logger,
			Naming:            u.naming(),
			ClientInfo:        info,
			OnChange:          func(*upstream.Conn) { g.rebuildSoon() },
			OnListChanged:     g.listChanged,
			OnResourceUpdated: g.resourceUpdated,
		})
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		g.conns = append(g.conns, c)
		g.byName[u.Name] = c
	}
	g.state.Store(&snapshot{view: catalog.Build(nil, g.multi)})
	g.server = g.newServer(info)
	g.forward = bridge.New(&bridge.Options{Ring: o.Ring, Audience: o.Name, Parking: o.Parking, MaxRounds: o.MaxRounds, Logger: logger})
	g.server.AddReceivingMiddleware(g.forward.TrackLogLevels)
	g.chain = pipeline.Chain(g.forward,
		pipeline.Log(logger),
		pipeline.Route(g),
		pipeline.Resolve(g.resolver, logger),
	)
	return g, nil
}

// defaultVersion is the version of the module the gateway was built from,
// or "devel".
func defaultVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/preflightmcp/preflight/gateway" && m.Version != "" && m.Version != "(devel)" {
				return m.Version
			}
		}
		if v := bi.Main.Version; bi.Main.Path == "github.com/preflightmcp/preflight/gateway" && v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

// Server returns the gateway's MCP server, to serve over any transport.
func (g *Gateway) Server() *mcp.Server { return g.server }

// View implements pipeline.Directory: the current aggregated catalog.
func (g *Gateway) View() *catalog.View { return g.state.Load().view }

// Upstream implements pipeline.Directory.
func (g *Gateway) Upstream(name string) (*upstream.Conn, bool) {
	c, ok := g.byName[name]
	return c, ok
}

// Start connects the upstreams (each on its own, in parallel; lazy ones
// when first needed) and keeps them connected until [Gateway.Close].
func (g *Gateway) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started {
		return
	}
	g.started = true
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.rebuildLoop(ctx)
	}()
	for _, c := range g.conns {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			c.Run(ctx)
		}()
	}
}

// Close ends parked calls and stops the upstreams (stdio servers get their
// grace period), and waits for them. Serve first, so that calls in flight
// finish.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.stopping = true
	cancel := g.cancel
	g.mu.Unlock()
	g.forward.Close()
	if cancel != nil {
		cancel()
	}
	g.wg.Wait()
	for ss := range g.server.Sessions() {
		ss.Close()
	}
	if d := g.opts.Disclosure; d != nil && d.Close != nil {
		return d.Close()
	}
	return nil
}

// WaitReady waits until every upstream that is not lazy is up, or ctx is
// done. It is meant for tests and for a command that wants to print what it
// serves.
func (g *Gateway) WaitReady(ctx context.Context) error {
	for {
		g.mu.Lock()
		changed := g.changed
		g.mu.Unlock()
		ready := true
		var waiting []string
		for _, c := range g.conns {
			h := c.Health()
			if c.Spec().Lazy {
				continue
			}
			if h.State != upstream.StateUp || !g.viewHas(c.Name()) {
				ready = false
				waiting = append(waiting, fmt.Sprintf("%s (%s)", h.Name, h.State))
			}
		}
		if ready {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("gateway: upstreams not ready: %v: %w", waiting, ctx.Err())
		}
	}
}

// viewHas reports whether the current view was built with upstream's
// listing.
func (g *Gateway) viewHas(name string) bool {
	_, ok := g.state.Load().upstreams[name]
	return ok
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
