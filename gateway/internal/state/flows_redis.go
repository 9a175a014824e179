package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps a scope in three keys under one hash tag (the scope's
// digest, so that a scope's scripts run in one slot of a cluster): a
// counter of its calls (n), a sorted set of fingerprints by expiry in
// milliseconds of the server's clock (z), and a hash from fingerprint to
// source (h). Every write sets the keys' own expiry to the ttl, so an idle
// scope disappears whole.
const nowLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// tickScript: INCR KEYS[1], expiring after ARGV[1] ms.
var tickScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n
`)

// markScript drops KEYS[1]'s expired fingerprints, adds ARGV[4..] with
// source ARGV[3] expiring after ARGV[1] ms, and keeps the ARGV[2] latest.
var markScript = redis.NewScript(nowLua + `
local ttl, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, #old do redis.call('HDEL', KEYS[2], old[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 4, #ARGV do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[3])
end
local n = redis.call('ZCARD', KEYS[1])
if n > max then
  local gone = redis.call('ZPOPMIN', KEYS[1], n - max)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[2], gone[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`)

// findScript returns the source of the first of ARGV that KEYS[1] holds
// unexpired, false if none.
var findScript = redis.NewScript(nowLua + `
for i = 1, #ARGV do
  local exp = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if exp and tonumber(exp) > now then
    local src = redis.call('HGET', KEYS[2], ARGV[i])
    if src then return src end
  end
end
return false
`)

type redisFlows struct {
	client redis.UniversalClient
	addr   string
	prefix string
}

// keys returns scope's keys: the counter, the set by expiry, the sources.
func (r *redisFlows) keys(scope string) (n, z, h string) {
	d := sha256.Sum256([]byte(scope))
	base := r.prefix + "{" + hex.EncodeToString(d[:12]) + "}:"
	return base + "n", base + "z", base + "h"
}

func (r *redisFlows) Tick(ctx context.Context, scope string, ttl time.Duration) (int64, error) {
	if err := checkFlowTTL(ttl); err != nil {
		return 0, err
	}
	n, _, _ := r.keys(scope)
	v, err := tickScript.Run(ctx, r.client, []string{n}, ttlMillis(ttl)).Int64()
	if err != nil {
		return 0, unavailable(ctx, r.addr, "flow", err)
	}
	return v, nil
}

func (r *redisFlows) Mark(ctx context.Context, scope string, fps []string, src FlowSource, ttl time.Duration, max int) error {
	if err := checkFlowTTL(ttl); err != nil {
		return err
	}
	if max <= 0 {
		return invalid("flow max %d: want more than 0", max)
	}
	if len(fps) == 0 {
		return nil
	}
	_, z, h := r.keys(scope)
	args := make([]any, 0, 3+len(fps))
	args = append(args, ttlMillis(ttl), max, encodeSource(src))
	for _, fp := range fps {
		args = append(args, fp)
	}
	if err := markScript.Run(ctx, r.client, []string{z, h}, args...).Err(); err != nil {
		return unavailable(ctx, r.addr, "flow", err)
	}
	return nil
}

func (r *redisFlows) Find(ctx context.Context, scope string, fps []string) (FlowSource, bool, error) {
	if len(fps) == 0 {
		return FlowSource{}, false, nil
	}
	_, z, h := r.keys(scope)
	args := make([]any, len(fps))
	for i, fp := range fps {
		args[i] = fp
	}
	v, err := findScript.Run(ctx, r.client, []string{z, h}, args...).Text()
	if errors.Is(err, redis.Nil) {
		return FlowSource{}, false, nil
	}
	if err != nil {
		return FlowSource{}, false, unavailable(ctx, r.addr, "flow", err)
	}
	src, ok := decodeSource(v)
	return src, ok, nil
}

// A source is stored as CALL\nUPSTREAM\nTOOL: names hold no control
// characters.
func encodeSource(s FlowSource) string {
	return strconv.FormatInt(s.Call, 10) + "\n" + s.Upstream + "\n" + s.Tool
}

func decodeSource(v string) (FlowSource, bool) {
	parts := strings.SplitN(v, "\n", 3)
	if len(parts) != 3 {
		return FlowSource{}, false
	}
	n, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return FlowSource{}, false
	}
	return FlowSource{Call: n, Upstream: parts[1], Tool: parts[2]}, true
}
