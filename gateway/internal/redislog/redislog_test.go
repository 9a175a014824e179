package redislog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/redislog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lockedBuffer is a log destination the client's goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A Redis that does not answer is logged as JSON records of the gateway's
// logger, not as the client's plain-text lines.
func TestDialFailureIsAJSONRecord(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var out lockedBuffer
	redislog.Use(slog.New(slog.NewJSONHandler(&out, nil)))
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer client.Close()
	if err := client.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a closed port answered PING")
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var dialed bool
	for _, l := range lines {
		var rec struct {
			Level, Msg, Detail string
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not a JSON record: %q (%v)", l, err)
		}
		if rec.Level == "WARN" && rec.Msg == "redis client" && strings.Contains(rec.Detail, "failed to dial") && strings.Contains(rec.Detail, addr) {
			dialed = true
		}
	}
	if !dialed {
		t.Fatalf("no record of the failed dial in:\n%s", out.String())
	}
}
