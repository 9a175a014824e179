// Package redislog routes the Redis client's own log lines (a pool that
// fails to dial, a connection it drops) into the gateway's slog logger, so
// that every line the gateway writes is a JSON record.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Use sends the Redis client's log lines to logger, as warnings. go-redis
// has one logger per process (redis.SetLogger), so the last call wins.
func Use(logger *slog.Logger) {
	if logger != nil {
		redis.SetLogger(printer{logger})
	}
}

// printer is go-redis's Logging over a slog logger.
type printer struct{ logger *slog.Logger }

func (p printer) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	p.logger.WarnContext(ctx, "redis client", "detail", text.Sanitize(msg))
}
