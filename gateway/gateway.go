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
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/flow"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/metrics"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
	"github.com/preflightmcp/preflight/resolve"
)

// Defaults of [Options].
const (
	DefaultName          = "preflight-gateway"
	DefaultShutdownGrace = 30 * time.Second
	DefaultCloseTimeout  = 15 * time.Second
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
	// stage.UpstreamOrStatic (the upstream's own tools/resolve within
	// its static bounds, else the static annotations).
	Resolver stage.Resolver
	// Ring seals the requestState the gateway gives clients. Nil means a
	// random key for this process (replicas need a shared ring).
	Ring *requeststate.Ring
	// Parking holds legacy upstreams' calls that wait for a 2026-07-28
	// client's answers. Nil means in-process, with package forward's
	// defaults.
	Parking forward.Parking
	// MaxRounds bounds the questions of one call. Zero means
	// forward.DefaultMaxRounds.
	MaxRounds int
	// ShutdownGrace bounds how long Serve waits for calls in flight when
	// it stops. Zero means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// CloseTimeout bounds Close: an upstream, a client's session or a
	// store that has not stopped by then is abandoned, and logged. Zero
	// means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// PageSize is the number of items per page of the lists the gateway
	// serves. Zero means DefaultPageSize.
	PageSize int
	// SessionIdle closes a legacy (2025-11-25) client's session after it
	// has sent nothing for this long. Zero means DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxSessions caps the legacy sessions open at once; past it a client
	// that opens one is told to retry later. Zero means
	// endpoint.DefaultMaxSessions (1000); negative means no cap.
	MaxSessions int
	// MaxSessionsPerPrincipal caps one principal's legacy sessions (all
	// clients of an anonymous gateway are one), so that one client cannot
	// take them all. Zero means endpoint.DefaultMaxSessionsPerUser (64);
	// negative means no cap.
	MaxSessionsPerPrincipal int
	// Disclosure turns on progressive disclosure of tool descriptions for
	// some or all upstreams. Nil means off.
	Disclosure *Disclosure

	// Auth authenticates the clients of the HTTP endpoint and names the
	// principal of every call (package auth). Nil means anonymous, served
	// on a loopback address only.
	Auth *auth.Authenticator
	// Approvals hold the calls whose decision is confirm and that nobody
	// confirmed in-band, until a person approves them on the page (the
	// approve stage). Nil means no out-of-band approval.
	Approvals *approval.Service
	// Page serves the gateway's web page at PagePath. Nil means none.
	Page *Page
	// AuditLog and Pins are what the page shows of the audit log and of
	// the pinned tool definitions. Nil means none.
	AuditLog page.AuditLog
	Pins     page.Pins

	// Pinner pins the tool definitions each upstream lists (the upstream's
	// own names) and holds back those that changed: a quarantined tool is
	// listed as its pinned definition and its calls are refused (the pin
	// stage) until someone approves the change. Nil means no pinning.
	Pinner *pin.Pinner

	// Auditor records every tools/call in the audit log (package audit):
	// calls that must be audited durably before they are forwarded, and
	// refused calls too. Nil means no audit log. [Gateway.Close] closes
	// it (writing what it buffers), then AuditStore.
	Auditor *audit.Auditor
	// AuditStore is the store Auditor writes to, if the gateway is to
	// close it; it is also what reads the log back (a page.AuditLog).
	AuditStore audit.Store
	// AuditSensitiveArgs name arguments whose values the audit log never
	// records (those whose names look like credentials never are either).
	AuditSensitiveArgs []string
	// Redactor redacts tools/call results by their sensitivity (package
	// redact) before they reach the client, on every path. Nil means
	// results pass as the upstream sent them.
	Redactor *redact.Redactor

	// Decisions turns on a decision per tools/call (allow, confirm or
	// deny, from the call's effective hints and the deployer's decision
	// rules) and in-band confirmation: the decide, ask and confirmed
	// stages of package stage. Nil means off: every call is forwarded.
	Decisions *stage.DecideOptions
	// Flow turns on flow control with Decisions: a tools/call whose
	// arguments carry a value the client was shown by another call, from
	// another upstream, gets Decisions.Flow (confirm or deny). Nil means
	// off.
	Flow *FlowOptions
	// ConfirmTTL is how long a 2026-07-28 client has to answer a
	// confirmation, and ConfirmWait how long a legacy client's answer is
	// awaited within its call. Zero means stage.DefaultConfirmTTL and
	// stage.DefaultConfirmWait.
	ConfirmTTL, ConfirmWait time.Duration
	// State holds the short-lived state replicas share: the single-use
	// nonces of confirmations. Nil means state.NewMemory (one process),
	// which Close closes; a State given here is the caller's to close.
	State *state.Store

	// Retry bounds the retries of calls after a transient upstream failure
	// (only calls that are idempotent by their resolution, or that never
	// reached the upstream; see package forward). Nil means the defaults of
	// forward.RetryPolicy; Attempts 1 turns retries off.
	Retry *forward.RetryPolicy
	// Metrics configures the Prometheus metrics served at MetricsPath. Nil
	// means on, with package metrics' defaults.
	Metrics *MetricsOptions

	// TracerProvider traces every call: a span per call, per stage it
	// crosses and per round trip to its upstream (docs/tracing.md). Nil
	// means no traces, at no cost. The gateway does not shut it down:
	// whoever made it does (a Closer).
	TracerProvider trace.TracerProvider

	// Closers are called by [Gateway.Close] after the upstreams stopped,
	// or by [Options.Close]: what the maker of the options opened for them
	// (stores, clients).
	Closers []func() error
}

// ListingObserver is a Resolver that wants each upstream's listing as the
// catalog is built from it (package setup's rules, checked against the
// tools as soon as they are listed).
type ListingObserver interface {
	Listed(upstream string, l *catalog.Listing, info *mcp.Implementation)
}

// Close closes what the options hold (the audit log, the pin,
// approval and disclosure stores, Redis clients) for options that no
// gateway took over: a mapping that failed half-way, a gateway that could
// not be built, a reload whose running gateway keeps its own stores. A
// Gateway built from the options closes them itself in [Gateway.Close].
// Closing twice is harmless.
func (o *Options) Close() error {
	var errs []error
	if o.Auditor != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		errs = append(errs, o.Auditor.Close(ctx))
		cancel()
		o.Auditor = nil
	}
	if o.AuditStore != nil {
		errs = append(errs, o.AuditStore.Close())
		o.AuditStore = nil
	}
	if d := o.Disclosure; d != nil && d.Close != nil {
		errs = append(errs, d.Close())
		d.Close = nil
	}
	for _, c := range o.Closers {
		errs = append(errs, c())
	}
	o.Closers = nil
	return errors.Join(errs...)
}

// closeTimeout bounds writing what the audit log buffers when options
// are closed.
const closeTimeout = 30 * time.Second

// FlowOptions configure flow control (package flow). Each zero field
// means flow's default.
type FlowOptions struct {
	// Sensitivity is the result sensitivity from which every candidate
	// value of a result is remembered; below it, only the secrets found.
	Sensitivity hints.Sensitivity
	// TTL is how long a value is remembered; Max bounds the values
	// remembered per principal (and legacy session).
	TTL time.Duration
	Max int
	// Secret keys the fingerprints; replicas need the same. Nil means a
	// random one for this process.
	Secret []byte
	// Servers are the upstreams' modes (stage.FlowOff: a trusted
	// destination; stage.FlowStrict: writing back is flagged too).
	Servers map[string]stage.FlowMode
}

// MetricsOptions configure the gateway's Prometheus metrics.
type MetricsOptions struct {
	// Off turns the metrics and MetricsPath off.
	Off bool
	// Buckets are the latency histogram's upper bounds in seconds; nil
	// means metrics.DefaultBuckets().
	Buckets []float64
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
	opts    Options
	logger  *slog.Logger
	server  *mcp.Server
	rs      *resolve.Server
	forward *forward.Forward
	chain   *call.Chain
	stages  []call.Stage // of chain, outermost first
	entry   *entry.Entry
	pinner  *pin.Pinner
	decider *stage.Decider    // nil when decisions are off
	pins    map[string]pinned // by upstream (rebuild goroutine only)
	metrics *metrics.Metrics  // nil when off

	// ups is the set of upstreams the next rebuild aggregates; the
	// snapshot in state holds the set it was built from, which routes
	// calls. Reload replaces both; retiring holds the upstreams a reload
	// removed or replaced until their calls in flight end.
	ups       atomic.Pointer[upstreamSet]
	resolvers atomic.Pointer[resolverBox]
	disclosed atomic.Pointer[discloseSet] // nil: disclosure is off
	reloadMu  sync.Mutex                  // one Reload at a time
	retiring  map[*upstream.Conn]*member  // under mu

	state    atomic.Pointer[snapshot]
	rebuildC chan struct{}
	announce atomic.Uint32 // upstream.ListKinds to announce at the next rebuild
	mirror   mirror        // what is registered with the SDK server (rebuild goroutine only)

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
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
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
		rebuildC: make(chan struct{}, 1),
		changed:  make(chan struct{}),
		retiring: map[*upstream.Conn]*member{},
		pinner:   o.Pinner,
		pins:     map[string]pinned{},
	}
	g.setResolver(o.Resolver)
	info := &mcp.Implementation{Name: o.Name, Version: o.Version}
	set := &upstreamSet{byName: map[string]*member{}, specs: map[string]UpstreamSpec{}, multi: len(o.Upstreams) > 1}
	for _, u := range o.Upstreams {
		if _, dup := set.byName[u.Name]; dup {
			return nil, fmt.Errorf("gateway: two upstreams named %q", u.Name)
		}
		m, err := g.newMember(u, info)
		if err != nil {
			return nil, err
		}
		set.add(m, u)
	}
	g.ups.Store(set)
	g.state.Store(&snapshot{view: catalog.Build(nil, set.multi), set: set})
	st := o.State
	if st == nil {
		g.ownState = state.NewMemory(nil)
		st = g.ownState
	}
	var obs forward.RetryObserver
	if o.Metrics == nil || !o.Metrics.Off {
		var mo metrics.Options
		if o.Metrics != nil {
			mo.Buckets = o.Metrics.Buckets
		}
		g.metrics = metrics.New(&mo)
		g.metrics.Upstreams(g.upstreamMetrics)
		obs = g.metrics
	}
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = o.TracerProvider.Tracer(tracing.Scope)
	}
	g.forward = forward.New(&forward.Options{Ring: o.Ring, Audience: o.Name, Parking: o.Parking, MaxRounds: o.MaxRounds,
		Logger: logger, Nonces: st.Nonces, Retry: o.Retry, RetryObserver: obs, Tracer: tracer})
	stages, err := g.newStages(st)
	if err != nil {
		g.closeState()
		return nil, err
	}
	g.stages = stages
	g.chain = call.CompileTraced(tracer, g.forward.Finals(), stages...)
	g.forward.SetAnswers(g.chain)
	g.server = g.newServer(info)
	if g.anonymous, err = auth.Anonymous(&auth.Options{Logger: logger}); err != nil {
		g.closeState()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if g.ui, err = g.newPage(); err != nil {
		g.closeState()
		return nil, err
	}
	return g, nil
}

// newStages returns the stages of the chain, outermost first: those whose
// feature is on.
func (g *Gateway) newStages(st *state.Store) ([]call.Stage, error) {
	o := g.opts
	logger := g.logger
	auditOpts := stage.AuditOptions{SensitiveArgs: o.AuditSensitiveArgs, Logger: logger}
	stages := []call.Stage{&stage.Log{Logger: logger}}
	if g.metrics != nil {
		stages = append(stages, &stage.Metrics{M: g.metrics})
	}
	stages = append(stages, &stage.Route{Dir: g}, &stage.Hold{Holder: g})
	if o.Auditor != nil {
		stages = append(stages, &stage.AuditRefused{Auditor: o.Auditor, Options: auditOpts})
	}
	if o.Disclosure != nil {
		stages = append(stages, &stage.Disclose{Gate: g})
	}
	if g.pinner != nil {
		stages = append(stages, &stage.Pin{Pins: g.pinner})
	}
	stages = append(stages, &stage.Resolve{Resolver: swapResolver{g}, Logger: logger})
	if o.Decisions != nil {
		d, err := stage.NewDecider(o.Decisions)
		if err != nil {
			return nil, fmt.Errorf("gateway: decisions: %w", err)
		}
		g.decider = d
		if f := o.Flow; f != nil {
			tr, err := flow.New(flow.Options{Flows: st.Flows, Secret: f.Secret, Sensitivity: f.Sensitivity, TTL: f.TTL, Max: f.Max})
			if err != nil {
				return nil, fmt.Errorf("gateway: flow: %w", err)
			}
			stages = append(stages, &stage.Flow{Tracker: tr, Servers: f.Servers, Logger: logger})
		}
		stages = append(stages, &stage.Decide{Decider: d},
			stage.NewAsk(stage.Ask{Ring: o.Ring, Audience: o.Name, Nonces: st.Nonces,
				TTL: o.ConfirmTTL, Wait: o.ConfirmWait, Resumer: g.forward, Logger: logger}))
	}
	if o.Approvals != nil {
		stages = append(stages, stage.NewApprove(stage.Approve{Approvals: o.Approvals, PageURL: g.PageURL,
			Ring: o.Ring, Audience: o.Name, Logger: logger}))
	}
	if o.Decisions != nil {
		stages = append(stages, &stage.Confirmed{})
	}
	if o.Auditor != nil {
		stages = append(stages, &stage.Audit{Auditor: o.Auditor, Options: auditOpts})
	}
	if o.Redactor != nil {
		stages = append(stages, &stage.Redact{Redactor: o.Redactor, Logger: logger})
	}
	return stages, nil
}

// closeState closes the state store New made.
func (g *Gateway) closeState() {
	if g.ownState != nil {
		g.ownState.Close()
	}
}

// upstreamMetrics reports each upstream's health for the metrics.
func (g *Gateway) upstreamMetrics() []metrics.Upstream {
	members := g.ups.Load().members
	out := make([]metrics.Upstream, 0, len(members))
	for _, m := range members {
		h := m.conn.Health()
		out = append(out, metrics.Upstream{Name: h.Name, Up: h.State == upstream.StateUp, Restarts: h.Restarts, Tools: h.Tools})
	}
	return out
}

// newMember makes the connection of one upstream; it does not run it.
func (g *Gateway) newMember(u UpstreamSpec, info *mcp.Implementation) (*member, error) {
	c, err := upstream.New(u.spec(), &upstream.Options{
		Logger:            g.logger,
		Naming:            u.naming(),
		ClientInfo:        info,
		OnChange:          func(*upstream.Conn) { g.rebuildSoon() },
		OnListChanged:     g.listChanged,
		OnResourceUpdated: g.resourceUpdated,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return &member{conn: c, idle: make(chan struct{}), done: make(chan struct{})}, nil
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
	g.cancel, g.runCtx = cancel, ctx
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.rebuildLoop(ctx)
	}()
	for _, m := range g.ups.Load().members {
		g.run(m)
	}
}

// run runs m's connection until the gateway stops or m is retired; g.mu
// held, g.runCtx set.
func (g *Gateway) run(m *member) {
	ctx, cancel := context.WithCancel(g.runCtx)
	m.cancel = cancel
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(m.done)
		m.conn.Run(ctx)
	}()
}

// Close ends parked calls and stops the upstreams (stdio servers get their
// grace period), and waits for them, at most CloseTimeout in all: what has
// not stopped by then is abandoned and logged. Serve first, so that calls
// in flight finish.
func (g *Gateway) Close() error {
	deadline := time.Now().Add(g.opts.CloseTimeout)
	g.mu.Lock()
	g.stopping = true
	cancel := g.cancel
	g.mu.Unlock()
	g.forward.Close()
	g.closeState()
	if cancel != nil {
		cancel()
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	step := func(what string, f func() error) {
		g.within(deadline, what, func() {
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	step("the upstreams", func() error { g.wg.Wait(); return nil })
	step("the clients' sessions", func() error {
		// The SDK's Close waits for the session's requests to end: one
		// that does not must not hold the others.
		var wg sync.WaitGroup
		for ss := range g.server.Sessions() {
			wg.Go(func() { ss.Close() })
		}
		wg.Wait()
		return nil
	})
	if a := g.opts.Auditor; a != nil {
		step("the audit log", func() error {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				return fmt.Errorf("gateway: writing the audit records still buffered: %w", err)
			}
			return nil
		})
	}
	if s := g.opts.AuditStore; s != nil {
		step("the audit store", s.Close)
	}
	if d := g.opts.Disclosure; d != nil && d.Close != nil {
		step("the disclosure store", d.Close)
	}
	for _, c := range g.opts.Closers {
		step("a store", c)
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

// within runs f and waits for it until deadline; past it, f is abandoned
// (it goes on alone) and logged, so that shutdown ends.
func (g *Gateway) within(deadline time.Time, what string, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.logger.Error("shutdown: abandoned what did not stop within the close timeout", "what", what, "closeTimeout", g.opts.CloseTimeout.String())
	}
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
		for _, m := range g.ups.Load().members {
			c := m.conn
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
