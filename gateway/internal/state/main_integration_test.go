//go:build integration

package state_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// externalDeployments is Redis: one client per replica, one prefix.
func externalDeployments() []deployment {
	return []deployment{
		{"redis", func(t testing.TB, n int, opts *state.Options) []*state.Store {
			o := state.Options{}
			if opts != nil {
				o = *opts
			}
			if o.Prefix == "" {
				o.Prefix = redistest.Prefix(t)
			}
			out := make([]*state.Store, n)
			for i := range out {
				out[i] = state.NewRedis(newClient(t, redistest.Addr(t)), &o)
				t.Cleanup(func() { out[i].Close() })
			}
			return out
		}},
	}
}

// newClient returns a client of the Redis at addr, closed at cleanup
// (after the stores using it, which are closed first).
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}
