package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Store is the gateway's short-lived shared state: single-use nonces,
// rate limits, flows of values between upstreams and notifications between replicas. Its fields are safe for
// concurrent use, and stay usable until Close.
type Store struct {
	Nonces  Nonces
	Limiter Limiter
	Flows   Flows
	Bus     Bus

	desc  string
	check func(context.Context) error
	close func() error
}

// Options configure a Store. A nil *Options means the zero value; each
// zero field means its default.
type Options struct {
	// Prefix starts every Redis key and channel of the store. Default
	// [DefaultPrefix]; deployments sharing one Redis use different ones.
	Prefix string
	// Addr names the Redis server in error messages. Default: the
	// client's address.
	Addr string

	// NonceCapacity bounds the unexpired nonces of the in-process store.
	// Default [DefaultNonceCapacity].
	NonceCapacity int
	// LimiterKeys bounds the keys with state in the in-process limiter.
	// Default [DefaultLimiterKeys].
	LimiterKeys int
	// FlowCapacity bounds the fingerprints the in-process flows hold,
	// for every scope together. Default [DefaultFlowCapacity].
	FlowCapacity int

	// Subscriptions bounds the bus subscriptions open in this process.
	// Default [DefaultSubscriptions].
	Subscriptions int
	// Buffer is each subscription's buffer, in messages. Default
	// [DefaultBuffer].
	Buffer int
	// SubscribeTimeout bounds how long a Redis subscription may take to
	// be confirmed. Default [DefaultSubscribeTimeout].
	SubscribeTimeout time.Duration
	// HealthInterval is how long the Redis subscription connection may
	// stay silent before it is pinged, and how long a ping may go
	// unanswered before the connection is replaced. Default
	// [DefaultHealthInterval].
	HealthInterval time.Duration

	// Logger receives the bus's reconnections. Default: discarded.
	Logger *slog.Logger
}

// Defaults of [Options].
const (
	DefaultPrefix         = "preflight:state:"
	DefaultHealthInterval = 15 * time.Second
)

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.NonceCapacity <= 0 {
		c.NonceCapacity = DefaultNonceCapacity
	}
	if c.LimiterKeys <= 0 {
		c.LimiterKeys = DefaultLimiterKeys
	}
	if c.FlowCapacity <= 0 {
		c.FlowCapacity = DefaultFlowCapacity
	}
	if c.Subscriptions <= 0 {
		c.Subscriptions = DefaultSubscriptions
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.SubscribeTimeout <= 0 {
		c.SubscribeTimeout = DefaultSubscribeTimeout
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// NewMemory returns a store in this process: the embedded default, for a
// single gateway. Its epoch is new each time, so state sealed before the
// gateway restarted is refused after. Prefix, Addr and the Redis timings
// of opts are not used.
func NewMemory(opts *Options) *Store {
	o := opts.withDefaults()
	c := newClock()
	h := newHub(o.Subscriptions, o.Buffer)
	return &Store{
		Nonces:  newMemNonces(o.NonceCapacity, c),
		Limiter: newMemLimiter(o.LimiterKeys, c),
		Flows:   newMemFlows(o.FlowCapacity, c),
		Bus:     &memBus{hub: h},
		desc:    "memory",
		check:   func(context.Context) error { return nil },
		close:   func() error { h.close(); return nil },
	}
}

// NewRedis returns a store in Redis, shared by the replicas that use the
// same server and prefix. The caller keeps client and closes it after
// the store. Nothing is sent until the store is used: a gateway starts
// while Redis is away and fails closed until it is back.
func NewRedis(client redis.UniversalClient, opts *Options) *Store {
	o := opts.withDefaults()
	if o.Addr == "" {
		o.Addr = addrOf(client)
	}
	bus := newRedisBus(client, o.Addr, o.Prefix+"bus:", &o)
	return &Store{
		Nonces:  &redisNonces{client: client, addr: o.Addr, prefix: o.Prefix + "{nonce}:"},
		Limiter: &redisLimiter{client: client, addr: o.Addr, prefix: o.Prefix + "limit:"},
		Flows:   &redisFlows{client: client, addr: o.Addr, prefix: o.Prefix + "flow:"},
		Bus:     bus,
		desc:    "redis at " + o.Addr,
		check:   func(ctx context.Context) error { return checkRedis(ctx, client, o.Addr) },
		close:   func() error { bus.close(); return nil },
	}
}

// Open returns the store at redisURL, with keys under opts.Prefix, when
// it is set; the in-process store otherwise. The store owns the Redis
// client it makes and closes it in Close. opts may be nil.
func Open(redisURL string, opts *Options) (*Store, error) {
	if redisURL == "" {
		return NewMemory(opts), nil
	}
	ro, err := redis.ParseURL(redisURL)
	if err != nil {
		// The URL is not repeated: it may hold a password.
		return nil, fmt.Errorf("state: redis.url is not a Redis URL: %s", text.Clip(text.OneLine(strings.ReplaceAll(err.Error(), redisURL, "<url>")), 200))
	}
	client := redis.NewClient(ro)
	s := NewRedis(client, opts)
	closeBus := s.close
	s.close = func() error { return errors.Join(closeBus(), client.Close()) }
	return s, nil
}

// Check reports whether the store can serve: for Redis, that it answers,
// and that it may not evict keys, since an evicted nonce could be
// replayed. A gateway calls it at start (to warn) and from its health
// endpoint.
func (s *Store) Check(ctx context.Context) error { return s.check(ctx) }

// Close stops the store's bus (closing every subscription's channel) and,
// for a store made by [Open], its Redis client.
func (s *Store) Close() error { return s.close() }

// String says where the state lives: "memory" or "redis at ADDR".
func (s *Store) String() string { return s.desc }

func addrOf(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return "?"
}

// checkRedis pings, then reads the eviction policy where CONFIG is
// allowed (managed services often refuse it; that is no error).
func checkRedis(ctx context.Context, client redis.UniversalClient, addr string) error {
	if err := client.Ping(ctx).Err(); err != nil {
		return unavailable(ctx, addr, "nonce", err)
	}
	cfg, err := client.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		return nil
	}
	if policy := cfg["maxmemory-policy"]; cfg["maxmemory"] != "0" && policy != "" && policy != "noeviction" {
		return fmt.Errorf("shared state (Redis at %s): maxmemory-policy is %s with maxmemory %s: Redis may evict a used nonce, which would let a confirmation be replayed; set maxmemory-policy noeviction (or maxmemory 0)",
			addr, text.Clip(text.OneLine(policy), 40), text.Clip(text.OneLine(cfg["maxmemory"]), 40))
	}
	return nil
}
