package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/redisstore"
)

// TestStoreDown: an unreachable Redis is an error, which the server turns
// into AUTHORIZATION_UNAVAILABLE.
func TestStoreDown(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	s := redisstore.New(c, nil)
	ctx := context.Background()
	if _, _, err := s.Lookup(ctx, "k", "t"); err == nil {
		t.Error("lookup on a dead Redis succeeded")
	}
	if err := s.Grant(ctx, "k", map[string]string{"t": "v"}, time.Hour); err == nil {
		t.Error("grant on a dead Redis succeeded")
	}
}
