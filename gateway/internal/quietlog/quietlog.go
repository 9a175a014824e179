// Package quietlog drops the routine records of the SDK: it logs every
// session it opens and closes at Info (one of each per request under
// 2026-07-28), which would drown the gateway's one record per call.
package quietlog

import (
	"context"
	"log/slog"
)

// Warn returns logger without its Info and Debug records.
func Warn(logger *slog.Logger) *slog.Logger {
	return slog.New(minLevel{logger.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
