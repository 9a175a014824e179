package gateway

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// upstreamSet is the gateway's upstreams at one moment. It is immutable:
// [Gateway.Reload] publishes a new one.
type upstreamSet struct {
	members []*member // in the order of Options.Upstreams
	byName  map[string]*member
	specs   map[string]upstream.Spec
	namings map[string]catalog.Naming
	multi   bool // more than one upstream: names are prefixed
}

// newUpstreamSet returns an empty set for n upstreams.
func newUpstreamSet(n int) *upstreamSet {
	return &upstreamSet{byName: map[string]*member{}, specs: map[string]upstream.Spec{}, namings: map[string]catalog.Naming{}, multi: n > 1}
}

func (s *upstreamSet) add(m *member, spec upstream.Spec, naming catalog.Naming) {
	s.members = append(s.members, m)
	s.byName[spec.Name] = m
	s.specs[spec.Name] = spec
	s.namings[spec.Name] = naming
}

// member is one running upstream connection and the calls it carries.
type member struct {
	conn   *upstream.Conn
	cancel context.CancelFunc // stops conn.Run; set by Gateway.run
	done   chan struct{}      // closed when conn.Run returned

	// calls counts the calls in flight, from route to their end; retire
	// subtracts retiredBias, so that a call that arrives later sees a
	// negative count and is refused, and the last call to end closes idle.
	calls    atomic.Int64
	idle     chan struct{}
	idleOnce sync.Once
}

const retiredBias = 1 << 40

// acquire counts a call on m; false if m is retired.
func (m *member) acquire() bool {
	if m.calls.Add(1) < 0 {
		m.release()
		return false
	}
	return true
}

func (m *member) release() {
	if m.calls.Add(-1) == -retiredBias {
		m.idleOnce.Do(func() { close(m.idle) })
	}
}

// retire refuses m's further calls; idle is closed when those in flight
// have ended.
func (m *member) retire() {
	if m.calls.Add(-retiredBias) == -retiredBias {
		m.idleOnce.Do(func() { close(m.idle) })
	}
}

// sameConnection reports whether two specifications make the same
// connection (the naming of an upstream, which only changes the catalog,
// is not part of its specification).
func sameConnection(a, b upstream.Spec) bool {
	if (a.Connect == nil) != (b.Connect == nil) {
		return false
	}
	if a.Connect != nil && reflect.ValueOf(a.Connect).Pointer() != reflect.ValueOf(b.Connect).Pointer() {
		return false
	}
	a.Connect, b.Connect = nil, nil
	if len(a.Args) == 0 && len(b.Args) == 0 {
		a.Args, b.Args = nil, nil
	}
	if len(a.Env) == 0 && len(b.Env) == 0 {
		a.Env, b.Env = nil, nil
	}
	if len(a.Headers) == 0 && len(b.Headers) == 0 {
		a.Headers, b.Headers = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func sameNaming(a, b catalog.Naming) bool {
	return a.Prefix == b.Prefix && a.Separator == b.Separator &&
		slices.Equal(a.Include, b.Include) && slices.Equal(a.Exclude, b.Exclude)
}

// swapResolver is the resolve stage's resolver: the current one, which a
// reload replaces atomically.
type swapResolver struct{ current atomic.Pointer[resolverBox] }

type resolverBox struct{ r stage.Resolver }

func (s *swapResolver) set(r stage.Resolver) { s.current.Store(&resolverBox{r}) }

func (s *swapResolver) get() stage.Resolver { return s.current.Load().r }

func (s *swapResolver) Resolve(ctx context.Context, q *stage.ResolveQuery) (*call.Resolution, error) {
	return s.get().Resolve(ctx, q)
}
