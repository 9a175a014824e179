// Package redisstore keeps progressive-disclosure authorization state
// ([github.com/preflightmcp/preflight/disclose.Store]) in Redis, so that
// several replicas of a server share it: a description fetched through one
// replica authorizes calls that reach another.
//
// Each scope is one Redis hash, key Prefix + scope key, mapping tool names
// to the version of the description that was fetched. A grant writes the
// fields and sets the hash's expiry in one round trip (a pipelined
// transaction); a check is one HGET. Redis expires the hash TTL after its
// last grant, on every replica at once.
package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix unless [Options.Prefix] says otherwise.
const DefaultPrefix = "preflight:disclose:"

// Options configure a [Store]. A nil *Options means the zero value.
type Options struct {
	// Prefix is prepended to every scope key. Empty means [DefaultPrefix].
	// Servers that must not share authorization (different deployments
	// on one Redis) use different prefixes.
	Prefix string
}

// Store is a disclose.Store in Redis.
type Store struct {
	client redis.UniversalClient
	prefix string
}

// New returns a store using client, which the caller keeps and closes.
func New(client redis.UniversalClient, opts *Options) *Store {
	s := &Store{client: client, prefix: DefaultPrefix}
	if opts != nil && opts.Prefix != "" {
		s.prefix = opts.Prefix
	}
	return s
}

// Grant implements disclose.Store: HSET and PEXPIRE in one transaction.
func (s *Store) Grant(ctx context.Context, key string, tools map[string]string, ttl time.Duration) error {
	if len(tools) == 0 {
		return nil
	}
	k := s.prefix + key
	fields := make([]any, 0, 2*len(tools))
	for name, v := range tools {
		fields = append(fields, name, v)
	}
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, fields...)
		p.PExpire(ctx, k, ttl)
		return nil
	})
	return err
}

// Lookup implements disclose.Store: one HGET.
func (s *Store) Lookup(ctx context.Context, key, tool string) (string, bool, error) {
	v, err := s.client.HGet(ctx, s.prefix+key, tool).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

// Forget implements disclose.Store: DEL.
func (s *Store) Forget(ctx context.Context, key string) error {
	return s.client.Del(ctx, s.prefix+key).Err()
}
