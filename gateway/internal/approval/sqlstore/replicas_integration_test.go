//go:build integration

package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/preflightmcp/preflight/hints"
)

// bound is how long a test waits for something that must happen; a limit,
// never a synchronization.
const bound = 30 * time.Second

// TestReplicasOnPostgresAndRedis: two Services as two replicas, each with
// its own pool on one PostgreSQL database and its own client of one Redis
// (notifications over state.Bus). A call waiting on one is released by an
// approval given on the other through the notification alone (the recheck
// is far longer than the test's bound); its retries racing on both run
// once; a second decision racing the first is refused.
func TestReplicasOnPostgresAndRedis(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	srv := redistest.Start(t, nil)
	prefix := redistest.Prefix(t)
	replica := func() *approval.Service {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		st := state.NewRedis(c, &state.Options{Prefix: prefix})
		t.Cleanup(func() { st.Close(); c.Close() })
		return approval.New(openSpec(t, dsn, nil), &approval.Options{Notifier: approval.BusNotifier(st.Bus), Recheck: time.Hour})
	}
	one, two := replica(), replica()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	call := approval.Call{Principal: "alice", Server: "files", Tool: "manage_files",
		Arguments: json.RawMessage(`{"action":"delete","path":"/tmp/a"}`), Effect: hints.EffectDelete, Reason: "deletes a file"}

	r, err := one.Ask(ctx, call)
	if err != nil || r.State != approval.Pending {
		t.Fatalf("Ask = %+v, %v", r, err)
	}
	if again, _ := two.Ask(ctx, call); again == nil || again.ID != r.ID {
		t.Fatalf("the other replica opened %+v, want %s", again, r.ID)
	}
	waited := make(chan *approval.Request, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		w, err := one.Wait(ctx, r.ID)
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
		waited <- w
	}()
	<-waiting
	// Approve on the other replica until the waiter has subscribed: an
	// approval given before the subscription is seen by Wait's first read.
	if _, err := two.Approve(ctx, r.ID, approval.Approver{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-waited:
		if w == nil || w.State != approval.Approved {
			t.Fatalf("Wait returned %+v", w)
		}
	case <-ctx.Done():
		t.Fatal("the approval given on one replica did not release the call waiting on the other")
	}
	if _, err := one.Deny(ctx, r.ID, approval.Approver{Principal: "alice"}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("a second decision on the other replica: %v, want ErrNotPending", err)
	}

	var ran atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			s := one
			if i%2 == 1 {
				s = two
			}
			got, err := s.Ask(ctx, call)
			if err == nil && got.State == approval.Used {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 1 {
		t.Errorf("16 retries on two replicas ran %d times, want 1", ran.Load())
	}
}
