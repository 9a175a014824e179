// Package state holds what more than one request of the gateway relies on
// and that lives minutes, not years: single-use nonces ([Nonces]), rate
// limits ([Limiter]) and notifications between replicas ([Bus], [Wait]).
// A [Store] bundles the three, either in this process ([NewMemory], the
// embedded default for one gateway) or in Redis ([NewRedis]), shared by
// every replica that uses the same server and key prefix; [Open] picks
// one from a Redis URL (package setup reads it from the configuration).
//
// Failure policy: when Redis cannot be reached, every operation returns an
// error matching [ErrUnavailable] that says where Redis is and what the
// gateway does meanwhile; nothing is silently allowed. The client
// reconnects by itself, and the bus resubscribes, so the gateway recovers
// without a restart. A Redis that restarts forgets the nonces it held;
// the epoch each nonce carries changes with it, and nonces of an earlier
// epoch are refused ([ErrStaleEpoch]).
//
// Redis keys, under the prefix (default [DefaultPrefix]):
//
//	{nonce}:epoch      the epoch and the run_id of the server holding it
//	{nonce}:NONCE      a used nonce, until its ttl
//	limit:KEY          a rate-limited key's arrival time, until its bucket is full
//	bus:TOPIC          a pub/sub channel (channels ignore the database number)
//
// docs/state.md says which state lives where and why.
package state
