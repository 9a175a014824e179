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
	specs   map[string]UpstreamSpec
	multi   bool // more than one upstream: names are prefixed
}

func (s *upstreamSet) add(m *member, spec UpstreamSpec) {
	s.members = append(s.members, m)
	s.byName[spec.Name] = m
	s.specs[spec.Name] = spec
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
// connection: every field but the naming ones (prefix, separator,
// filters), which only change the catalog.
func sameConnection(a, b UpstreamSpec) bool {
	if (a.Connect == nil) != (b.Connect == nil) {
		return false
	}
	if a.Connect != nil && reflect.ValueOf(a.Connect).Pointer() != reflect.ValueOf(b.Connect).Pointer() {
		return false
	}
	a.Connect, b.Connect = nil, nil
	a.Prefix, a.Separator, a.Include, a.Exclude = "", "", nil, nil
	b.Prefix, b.Separator, b.Include, b.Exclude = "", "", nil, nil
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
