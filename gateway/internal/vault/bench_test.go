package vault_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

func benchVault(b *testing.B) *vault.Vault {
	v, err := vault.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "vault.db"), []vault.Key{key("k1", 1)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { v.Close() })
	return v
}

// BenchmarkGet reads and opens one connection (SQLite).
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	v := benchVault(b)
	if err := v.Put(ctx, connection("alice", "files", "token", time.Now().Add(time.Hour))); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.Get(ctx, "alice", "files"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut seals and replaces one connection (SQLite, synchronous=FULL).
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	v := benchVault(b)
	i := 0
	for b.Loop() {
		i++
		if err := v.Put(ctx, connection("alice", "files", "token-"+strconv.Itoa(i), time.Now().Add(time.Hour))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefreshValid is Refresh of a token still valid: a read, no lock.
func BenchmarkRefreshValid(b *testing.B) {
	ctx := context.Background()
	v := benchVault(b)
	if err := v.Put(ctx, connection("alice", "files", "token", time.Now().Add(time.Hour))); err != nil {
		b.Fatal(err)
	}
	r := &refresher{now: time.Now}
	for b.Loop() {
		if _, err := v.Refresh(ctx, "alice", "files", time.Minute, r.refresh); err != nil {
			b.Fatal(err)
		}
	}
	if r.calls.Load() != 0 {
		b.Fatal("refreshed a valid token")
	}
}
