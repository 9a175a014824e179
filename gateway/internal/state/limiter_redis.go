package state

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcraScript is [gcra] in Redis, on the server's clock (TIME), in
// microseconds: KEYS[1] holds the key's theoretical arrival time and
// expires when the bucket is full again; ARGV[1] is the emission interval
// and ARGV[2] the burst tolerance. It returns 0 when the event is allowed,
// else the wait. Times stay below 2^53, exact in Lua's doubles.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new = tat + iv
local wait = new - tau - now
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))
return 0
`)

// redisLimiter is a Limiter in Redis: one script call per event.
type redisLimiter struct {
	client redis.UniversalClient
	addr   string
	prefix string
}

func (r *redisLimiter) Allow(ctx context.Context, key string, limit Limit) (bool, time.Duration, error) {
	if err := checkKey("limiter key", key); err != nil {
		return false, 0, err
	}
	iv, tau, err := limit.interval()
	if err != nil {
		return false, 0, err
	}
	wait, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key}, iv, tau).Int64()
	if err != nil {
		return false, 0, unavailable(ctx, r.addr, "limit", err)
	}
	if wait > 0 {
		return false, time.Duration(wait) * time.Microsecond, nil
	}
	return true, 0, nil
}
