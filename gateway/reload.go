package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// member returns the member whose connection is c: in the current set, or
// among those retiring.
func (g *Gateway) member(c *upstream.Conn) *member {
	if m, ok := g.state.Load().set.byName[c.Name()]; ok && m.conn == c {
		return m
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.retiring[c]
}

// Hold implements stage.Holder: it counts a call on the member whose
// connection conn is, until release; false when the member was retired.
func (g *Gateway) Hold(conn *upstream.Conn) (release func(), ok bool) {
	m := g.member(conn)
	if m == nil {
		return func() {}, true
	}
	if !m.acquire() {
		return nil, false
	}
	return m.release, true
}

// newMember makes the connection of one upstream; it does not run it.
func (g *Gateway) newMember(u UpstreamSpec, info *mcp.Implementation) (*member, error) {
	c, err := upstream.New(g.spec(u), &upstream.Options{
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

// setResolver makes r, or the default when r is nil, the resolver of the
// next calls.
func (g *Gateway) setResolver(r stage.Resolver) {
	if r == nil {
		r = stage.UpstreamOrStatic{Logger: g.logger}
	}
	g.resolvers.set(r)
}

// Reload applies new options to a started gateway without dropping the
// calls in flight:
//
//   - upstreams added are connected (in parallel, as at start);
//   - upstreams removed stop taking calls at once, and are stopped when
//     their calls in flight have ended, or after ShutdownGrace;
//   - upstreams whose specification changed are replaced: the new
//     connection is made first (Reload waits, within ctx, for its first
//     attempt to succeed or fail, so the upstream's tools do not blink),
//     then the old one is retired as a removed one is;
//   - upstreams whose specification is the same are left alone (their
//     process and session are not touched), even if their prefix,
//     separator or filters changed, which only change the catalog;
//   - the resolver and the set of disclosed upstreams are replaced
//     atomically: the next call uses the new ones.
//
// Clients get the list_changed notifications of what changed in the
// catalog. Options that only take effect at start (Name, Version,
// Instructions, PageSize, SessionIdle, MaxRounds, ShutdownGrace, Ring,
// Parking, and whether disclosure is on and its store) keep their running
// values; each one that differs is logged as needing a restart. A
// Disclosure of opts that is not used has its Close called.
//
// A Connect function cannot be compared: an upstream whose Connect is the
// same function literal counts as unchanged.
//
// Reload returns an error, and changes nothing, when opts cannot be
// applied (no upstreams, two of one name, a bad specification), before
// [Gateway.Start] and after [Gateway.Close]. It returns ctx's error if ctx
// ended while it waited; what it had started is applied all the same.
func (g *Gateway) Reload(ctx context.Context, opts *Options) error {
	if opts == nil || len(opts.Upstreams) == 0 {
		return errors.New("gateway: reload: no upstreams")
	}
	o := *opts
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.mu.Lock()
	started, stopping, runCtx := g.started, g.stopping, g.runCtx
	g.mu.Unlock()
	if !started {
		return errors.New("gateway: reload before Start")
	}
	if stopping {
		return errors.New("gateway: reload while stopping")
	}

	if !g.sameSignIn(o.Upstreams) {
		return errors.New("gateway: reload: which upstreams sign in with OAuth, or how, changed: restart the gateway to apply it")
	}

	// Plan, and make the new connections, before changing anything.
	old := g.ups.Load()
	next := newUpstreamSet(len(o.Upstreams))
	info := &mcp.Implementation{Name: g.opts.Name, Version: g.opts.Version}
	var added, replaced, kept, renamed []string
	var fresh, waitFor []*member
	for _, u := range o.Upstreams {
		if _, dup := next.byName[u.Name]; dup {
			return fmt.Errorf("gateway: reload: two upstreams named %q", u.Name)
		}
		if err := u.naming().Check(); err != nil {
			return fmt.Errorf("gateway: reload: upstream %q: %w", u.Name, err)
		}
		if m, ok := old.byName[u.Name]; ok && sameConnection(old.specs[u.Name], g.spec(u)) {
			next.add(m, g.spec(u), u.naming())
			kept = append(kept, u.Name)
			if !sameNaming(old.namings[u.Name], u.naming()) {
				renamed = append(renamed, u.Name)
			}
			continue
		}
		m, err := g.newMember(u, info)
		if err != nil {
			return fmt.Errorf("gateway: reload: %w", err) // nothing started yet
		}
		next.add(m, g.spec(u), u.naming())
		fresh = append(fresh, m)
		if _, ok := old.byName[u.Name]; ok {
			replaced = append(replaced, u.Name)
			if !u.Lazy {
				waitFor = append(waitFor, m)
			}
		} else {
			added = append(added, u.Name)
		}
	}
	var gone []*member
	var removed []string
	for _, m := range old.members {
		if next.byName[m.conn.Name()] != m {
			gone = append(gone, m)
			if _, ok := next.byName[m.conn.Name()]; !ok {
				removed = append(removed, m.conn.Name())
			}
		}
	}

	g.restartOnly(&o)
	g.setResolver(o.Resolver)
	disclosureChanged := g.reloadDisclosure(o.Disclosure)

	// Connect the new upstreams.
	g.mu.Lock()
	if g.stopping {
		g.mu.Unlock()
		return errors.New("gateway: reload while stopping")
	}
	for _, m := range fresh {
		g.run(m)
	}
	g.mu.Unlock()
	werr := g.firstAttempt(ctx, runCtx, waitFor)

	// Publish the new set and the catalog built from it. The upstreams
	// leaving it are findable among the retiring from now on, so that a
	// call routed by the previous catalog is still counted on its own.
	g.mu.Lock()
	for _, m := range gone {
		g.retiring[m.conn] = m
	}
	g.mu.Unlock()
	g.ups.Store(next)
	if disclosureChanged {
		g.listChanged(nil, upstream.ListTools)
	}
	g.rebuildSoon()
	for g.state.Load().set != next {
		select {
		case <-g.Changed():
		case <-runCtx.Done():
			return errors.New("gateway: reload: the gateway stopped")
		}
	}

	// Retire what is no longer served.
	g.mu.Lock()
	for _, m := range gone {
		m.retire()
		if g.stopping {
			m.cancel() // Close waits for it
			continue
		}
		g.wg.Add(1)
		go g.drain(m, runCtx)
	}
	g.mu.Unlock()
	g.logger.Info("configuration reloaded", "added", added, "removed", removed, "replaced", replaced,
		"unchanged", len(kept), "renamed", renamed, "disclosureChanged", disclosureChanged)
	return werr
}

// firstAttempt waits until each of ms has connected and listed, or failed
// its first attempt, or ctx or run ends.
func (g *Gateway) firstAttempt(ctx, run context.Context, ms []*member) error {
	for {
		changed := g.Changed()
		pending := slices.ContainsFunc(ms, func(m *member) bool {
			switch m.conn.Health().State {
			case upstream.StateUp:
				return m.conn.Listing() == nil
			case upstream.StateDown, upstream.StateStopped:
				return false
			}
			return true
		})
		if !pending {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("gateway: reload: replaced upstreams not connected yet: %w", ctx.Err())
		case <-run.Done():
			return nil
		}
	}
}

// drain stops m once its calls in flight have ended, or after
// ShutdownGrace. It runs on its own goroutine, counted in g.wg.
func (g *Gateway) drain(m *member, run context.Context) {
	defer g.wg.Done()
	t := time.NewTimer(g.opts.ShutdownGrace)
	defer t.Stop()
	select {
	case <-m.idle:
	case <-t.C:
		g.logger.Warn("upstream removed by a reload still had calls in flight; stopping it", "server", m.conn.Name(), "grace", g.opts.ShutdownGrace)
	case <-run.Done():
	}
	m.cancel()
	<-m.done
	g.mu.Lock()
	delete(g.retiring, m.conn)
	g.mu.Unlock()
	g.logger.Info("upstream stopped after a reload", "server", m.conn.Name())
}

// restartOnly logs each option of o that differs from the running one and
// only takes effect at start.
func (g *Gateway) restartOnly(o *Options) {
	cur := g.opts
	var keys []string
	diff := func(key string, differs bool) {
		if differs {
			keys = append(keys, key)
		}
	}
	diff("name", o.Name != "" && o.Name != cur.Name)
	diff("version", o.Version != "" && o.Version != cur.Version)
	diff("instructions", o.Instructions != cur.Instructions)
	diff("pageSize", o.PageSize > 0 && o.PageSize != cur.PageSize || o.PageSize <= 0 && cur.PageSize != DefaultPageSize)
	diff("sessionIdle", o.SessionIdle > 0 && o.SessionIdle != cur.SessionIdle || o.SessionIdle <= 0 && cur.SessionIdle != DefaultSessionIdle)
	diff("maxSessions", o.MaxSessions != cur.MaxSessions || o.MaxSessionsPerPrincipal != cur.MaxSessionsPerPrincipal)
	diff("shutdownGrace", o.ShutdownGrace > 0 && o.ShutdownGrace != cur.ShutdownGrace || o.ShutdownGrace <= 0 && cur.ShutdownGrace != DefaultShutdownGrace)
	diff("closeTimeout", o.CloseTimeout > 0 && o.CloseTimeout != cur.CloseTimeout || o.CloseTimeout <= 0 && cur.CloseTimeout != DefaultCloseTimeout)
	diff("maxRounds", o.MaxRounds != cur.MaxRounds)
	diff("ring", o.Ring != nil && o.Ring != cur.Ring)
	diff("parking", o.Parking != nil && o.Parking != cur.Parking)
	for _, k := range keys {
		g.logger.Warn("option not reloaded: it takes effect at start; restart the gateway to apply it", "option", k)
	}
}

// reloadDisclosure applies d's set of disclosed upstreams, if disclosure
// is on (turning it on or off, or changing its store or settings, needs a
// restart), and reports whether the set changed.
func (g *Gateway) reloadDisclosure(d *Disclosure) bool {
	if d != nil && d.Close != nil {
		defer func() {
			if err := d.Close(); err != nil {
				g.logger.Warn("closing the unused disclosure store of a reload", "error", err)
			}
			d.Close = nil // closed: Options.Close skips it
		}()
	}
	cur := g.opts.Disclosure
	switch {
	case cur == nil && d == nil:
		return false
	case cur == nil:
		g.logger.Warn("option not reloaded: it takes effect at start; restart the gateway to apply it", "option", "disclosure")
		return false
	case d == nil:
		// Off for every upstream; the tool_descriptions resource stays
		// until a restart.
		next := &discloseSet{names: map[string]bool{}}
		if prev := g.disclosure.set.Swap(next); !prev.equal(next) {
			return true
		}
		return false
	}
	a, b := cur.Options, d.Options
	if a.TTL != b.TTL || a.URI != b.URI || a.Schema != b.Schema || a.FetchRate != b.FetchRate ||
		a.FetchBurst != b.FetchBurst || a.MaxToolsPerRead != b.MaxToolsPerRead || (a.Store == nil) != (b.Store == nil) {
		g.logger.Warn("option not reloaded: it takes effect at start; restart the gateway to apply it", "option", "disclosure settings")
	}
	next := newDiscloseSet(d.Servers)
	return !g.disclosure.set.Swap(next).equal(next)
}
