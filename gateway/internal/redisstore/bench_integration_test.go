//go:build integration

package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/redisstore"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

// BenchmarkLookup is the per-call authorization check with the Redis store
// (one HGET) beside a bare PING and the in-memory store, in one run:
//
//	go test -run '^$' -bench Lookup -benchmem -count 5 ./gateway/redisstore/
func BenchmarkLookup(b *testing.B) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(b)})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	b.Run("redis-ping", func(b *testing.B) {
		for b.Loop() {
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	stores := map[string]disclose.Store{
		"redis":  redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(b)}),
		"memory": disclose.NewMemoryStore(nil),
	}
	for _, name := range []string{"redis", "memory"} {
		s := stores[name]
		b.Run(name, func(b *testing.B) {
			if err := s.Grant(ctx, "principal:alice", map[string]string{"echo": "v1"}, time.Hour); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := s.Lookup(ctx, "principal:alice", "echo"); err != nil || !ok {
					b.Fatalf("lookup: %v %v", ok, err)
				}
			}
		})
	}
}
