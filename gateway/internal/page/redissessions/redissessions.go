// Package redissessions keeps the approval page's sessions
// ([page.Sessions]) in Redis, so that every replica behind a load
// balancer sees a sign-in made on any of them, and a sign-out ends the
// session on all of them.
//
// A session is one string key, Prefix + "{page}s:" + its key (a hash of
// the cookie), holding the session as JSON and expiring with it. Each
// principal's sessions are also in a sorted set, Prefix + "{page}p:" +
// the principal (and whether it is an admin's), scored by expiry (the
// hash tag keeps them in one slot of a Redis Cluster): a sign-in
// drops the principal's expired sessions and, past PerPrincipal, its
// oldest, in one script, so that one principal's sign-ins never grow
// without bound. Sessions are bounded in time by their expiry and in
// number by PerPrincipal per principal who can sign in. The signed sign-in
// tokens used are kept too ([Store.Spend]), so that a login link signs in
// once on the whole fleet.
package redissessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/page"
)

// DefaultPerPrincipal bounds one principal's sessions unless
// [Options.PerPrincipal] says otherwise, as page.MemSessions does.
const DefaultPerPrincipal = 8

// Options configure a [Store]; nil means the defaults.
type Options struct {
	// Prefix starts every key. Empty means "preflight:page:".
	Prefix string
	// PerPrincipal bounds one principal's sessions: its next sign-in drops
	// its oldest. Zero means [DefaultPerPrincipal].
	PerPrincipal int
}

// Store is a page.Sessions in Redis.
type Store struct {
	client       redis.UniversalClient
	prefix       string
	perPrincipal int
}

// New returns a store on client, which the caller keeps and closes.
func New(client redis.UniversalClient, o *Options) *Store {
	s := &Store{client: client, prefix: "preflight:page:", perPrincipal: DefaultPerPrincipal}
	if o != nil {
		if o.Prefix != "" {
			s.prefix = o.Prefix
		}
		if o.PerPrincipal > 0 {
			s.perPrincipal = o.PerPrincipal
		}
	}
	return s
}

// create stores a session and indexes it under its principal, dropping
// the principal's expired sessions and then its oldest past the bound.
// KEYS: the session, the principal's set. ARGV: the session's JSON, its
// expiry (ms since the epoch), now (ms), the bound, the session key
// prefix, the session's key.
var create = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
local n = redis.call('ZCARD', KEYS[2])
local bound = tonumber(ARGV[4])
if n >= bound then
  local old = redis.call('ZRANGE', KEYS[2], 0, n - bound)
  for _, k in ipairs(old) do
    redis.call('DEL', ARGV[5] .. k)
    redis.call('ZREM', KEYS[2], k)
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[6])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
return 1
`)

// Create implements page.Sessions.
func (s *Store) Create(ctx context.Context, key string, sess page.Session) error {
	data, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	exp, now := sess.Expires.UnixMilli(), time.Now().UnixMilli()
	if exp <= now {
		return nil // already over: nothing to keep
	}
	err = create.Run(ctx, s.client, []string{s.sessionKey(key), s.principalKey(sess.Identity)},
		data, exp, now, s.perPrincipal, s.prefix+"{page}s:", key).Err()
	if err != nil {
		return fmt.Errorf("page sessions: %w", err)
	}
	return nil
}

// Get implements page.Sessions.
func (s *Store) Get(ctx context.Context, key string, now time.Time) (page.Session, error) {
	data, err := s.client.Get(ctx, s.sessionKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return page.Session{}, page.ErrNoSession
	}
	if err != nil {
		return page.Session{}, fmt.Errorf("page sessions: %w", err)
	}
	var sess page.Session
	if err := json.Unmarshal(data, &sess); err != nil {
		return page.Session{}, fmt.Errorf("page sessions: a session that does not decode: %w", err)
	}
	if !now.Before(sess.Expires) {
		return page.Session{}, page.ErrNoSession
	}
	return sess, nil
}

// Delete implements page.Sessions: the session ends on every replica.
func (s *Store) Delete(ctx context.Context, key string) error {
	sess, err := s.Get(ctx, key, time.Time{})
	if errors.Is(err, page.ErrNoSession) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.sessionKey(key))
		p.ZRem(ctx, s.principalKey(sess.Identity), key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("page sessions: %w", err)
	}
	return nil
}

// Spend implements page.SpentTokens: a sign-in token used on any replica
// is refused on every other until it expires (one SET NX, key Prefix +
// "{page}t:" + id).
func (s *Store) Spend(ctx context.Context, id string, until time.Time) (bool, error) {
	ttl := time.Until(until)
	if ttl <= 0 {
		return false, nil
	}
	first, err := s.client.SetNX(ctx, s.prefix+"{page}t:"+id, 1, ttl.Round(time.Millisecond)+time.Millisecond).Result()
	if err != nil {
		return false, fmt.Errorf("page sign-in tokens: %w", err)
	}
	return first, nil
}

func (s *Store) sessionKey(key string) string { return s.prefix + "{page}s:" + key }

// principalKey names the set of a principal's sessions; an admin's are
// apart, so that no sign-in that is not an admin's drops an admin's.
func (s *Store) principalKey(id page.Identity) string {
	kind := "user:"
	if id.Admin {
		kind = "admin:"
	}
	return s.prefix + "{page}p:" + kind + id.Principal
}
