package setup

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/page/redissessions"
)

// PageSessions returns where the approval page keeps its sessions: in the
// Redis of redis.url, under redis.prefix + "page:", so that a person
// signed in through one replica is signed in on every other and a sign-out
// ends the session on all; nil (in process) without redis.url. close
// closes its Redis client; check names the store for the health report.
func PageSessions(cfg *config.Config) (s page.Sessions, check gateway.StoreCheck, close func() error, err error) {
	if cfg == nil || cfg.Redis.URL == "" {
		return nil, gateway.StoreCheck{Keeps: "page sessions", At: "memory"}, func() error { return nil }, nil
	}
	ro, err := redis.ParseURL(cfg.Redis.URL)
	if err != nil {
		// The URL is not repeated: it may hold a password.
		return nil, gateway.StoreCheck{}, nil, fmt.Errorf("configuration: redis.url: not a Redis URL")
	}
	client := redis.NewClient(ro)
	prefix := cmp.Or(cfg.Redis.Prefix, config.DefaultRedisPrefix)
	return redissessions.New(client, &redissessions.Options{Prefix: prefix + "page:"}), redisCheck("page sessions", client), client.Close, nil
}

// redisCheck names a store in the Redis client talks to, for the health
// report: its host and port, never the URL (it may hold a password).
func redisCheck(keeps string, client *redis.Client) gateway.StoreCheck {
	return gateway.StoreCheck{Keeps: keeps, At: "redis at " + client.Options().Addr,
		Ping: func(ctx context.Context) error { return client.Ping(ctx).Err() }}
}

// PageLoginKeys returns the keys that sign the approval page's login links
// on a fleet, derived from requestState's keys (which every replica
// holds), the sealing key's first; none without them.
func PageLoginKeys(cfg *config.Config) [][]byte {
	var keys [][]byte
	for _, k := range cfg.RequestState.Keys {
		mac := hmac.New(sha256.New, k.Secret)
		mac.Write([]byte("preflight/page-login-links"))
		keys = append(keys, mac.Sum(nil))
	}
	return keys
}
