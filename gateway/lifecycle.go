package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/flow"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/metrics"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"go.opentelemetry.io/otel/trace"
)

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
		pins:     newPinChecks(o.Pinner, logger),
	}
	g.setResolver(o.Resolver)
	info := &mcp.Implementation{Name: o.Name, Version: o.Version}
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
	if err := g.newSignIn(&o); err != nil {
		return nil, err
	}
	set := newUpstreamSet(len(o.Upstreams))
	for _, u := range o.Upstreams {
		if _, dup := set.byName[u.Name]; dup {
			return nil, fmt.Errorf("gateway: two upstreams named %q", u.Name)
		}
		m, err := g.newMember(u, info)
		if err != nil {
			return nil, err
		}
		set.add(m, g.spec(u), u.naming())
	}
	g.ups.Store(set)
	g.state.Store(&snapshot{view: catalog.Build(nil, set.multi), set: set})
	st := o.State
	if st == nil {
		g.ownState = state.NewMemory(nil)
		st = g.ownState
	}
	g.stores = &storeProbe{checks: append([]StoreCheck{{Keeps: "state", At: st.String(), Ping: st.Check,
		FailsClosed: "single-use confirmations of 2026-07-28 clients (neither asked nor accepted)"}}, o.Stores...)}
	g.forward = forward.New(&forward.Options{Ring: o.Ring, Audience: o.Name, Parking: o.Parking, MaxRounds: o.MaxRounds,
		Logger: logger, Nonces: st.Nonces, Retry: o.Retry, RetryObserver: obs})
	stages, err := g.newStages(st)
	if err != nil {
		g.closeState()
		return nil, err
	}
	g.stages = stages
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = o.TracerProvider.Tracer(tracing.Scope)
	}
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
	if g.signIn != nil {
		stages = append(stages, &stage.SignIn{Manager: g.signIn, PageURL: g.PageURL})
	}
	if o.Disclosure != nil {
		stages = append(stages, &stage.Disclose{Gate: g})
	}
	if o.Pinner != nil {
		stages = append(stages, &stage.Pin{Pins: o.Pinner})
	}
	stages = append(stages, &stage.Resolve{Resolver: &g.resolvers, Logger: logger})
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
	if g.signIn != nil {
		_ = g.signIn.Close() // ends the sign-ins under way
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

// WaitReady waits until every upstream that is not lazy, nor waiting for
// somebody to connect it (upstream.StateSignIn), is up, or ctx is
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
			if c.Spec().Lazy || h.State == upstream.StateSignIn {
				continue // connects at first use, or once somebody connects it on the page
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
