package state

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps the epoch in one key, EPOCH RUNID: a random epoch and the
// run_id of the Redis server that holds it. The run_id changes at every
// start of a server and differs between a primary and its replicas, so a
// restart (even one that reloads the data from disk, which may miss the
// last writes) or a failover makes the stored epoch stale, as a lost or
// flushed key does; the next Issue or Epoch replaces it. Both scripts
// read the run_id from INFO inside Redis, atomically with the keys.
const runIDLua = `
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '-'
`

// epochScript returns the current epoch, making ARGV[1] the epoch when
// there is none for this server. KEYS[1] is the epoch key.
var epochScript = redis.NewScript(runIDLua + `
local v = redis.call('GET', KEYS[1])
if v then
  local e, r = string.match(v, '^(%S+) (%S+)$')
  if r == run then return e end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. run)
return ARGV[1]
`)

// useScript consumes a nonce: -1 when ARGV[1] is not the current epoch of
// this server, else 1 when KEYS[2] was set (SET NX PX ARGV[2]) and 0 when
// it existed. KEYS[1] is the epoch key.
var useScript = redis.NewScript(runIDLua + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] .. ' ' .. run then return -1 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`)

// redisNonces are Nonces in Redis. The epoch key and the nonce keys share
// a hash tag, so the scripts also run on Redis Cluster (in one slot).
type redisNonces struct {
	client redis.UniversalClient
	addr   string
	prefix string // ends with the hash tag {nonce}:
}

func (r *redisNonces) epochKey() string { return r.prefix + "epoch" }

func (r *redisNonces) Epoch(ctx context.Context) (string, error) {
	e, err := epochScript.Run(ctx, r.client, []string{r.epochKey()}, newToken()).Text()
	if err != nil {
		return "", unavailable(ctx, r.addr, "epoch", err)
	}
	return e, nil
}

func (r *redisNonces) Issue(ctx context.Context) (string, error) {
	e, err := r.Epoch(ctx)
	if err != nil {
		return "", err
	}
	return e + "." + newToken(), nil
}

func (r *redisNonces) Use(ctx context.Context, nonce string, ttl time.Duration) (bool, error) {
	epoch, err := parseNonce(nonce)
	if err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := useScript.Run(ctx, r.client, []string{r.epochKey(), r.prefix + nonce}, epoch, ttlMillis(ttl)).Int()
	if err != nil {
		return false, unavailable(ctx, r.addr, "nonce", err)
	}
	switch n {
	case 1:
		return true, nil
	case 0:
		return false, nil
	default:
		return false, staleEpoch(epoch)
	}
}
