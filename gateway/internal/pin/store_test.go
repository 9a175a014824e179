package pin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/internal/storetest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Factory{Open: func(*testing.T) pin.Store { return pin.NewMemoryStore(0) }})
}

// TestMemoryStoreLimit checks that the memory store is bounded.
func TestMemoryStoreLimit(t *testing.T) {
	t.Parallel()
	s := pin.NewMemoryStore(2)
	ctx := context.Background()
	for i, name := range []string{"a", "b", "c"} {
		_, err := s.Pin(ctx, "srv", storetest.Def(t, name, "d", false), time.Now())
		if (err != nil) != (i == 2) || err != nil && !strings.Contains(err.Error(), "limit") {
			t.Errorf("pin %d: %v", i, err)
		}
	}
	// Pinning a tool it holds still answers.
	if _, err := s.Pin(ctx, "srv", storetest.Def(t, "a", "d", false), time.Now()); err != nil {
		t.Errorf("pin of a held tool at the limit: %v", err)
	}
}
