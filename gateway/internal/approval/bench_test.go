package approval_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
)

// BenchmarkAskApproveUse measures one out-of-band approval end to end in
// process: the call asks, a person approves, the retry consumes it.
//
//	go test -run '^$' -bench . -benchmem ./gateway/approval
func BenchmarkAskApproveUse(b *testing.B) {
	s := approval.New(approval.NewMemStore(&approval.MemOptions{MaxRequests: 1 << 20}), nil)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		c := deleteCall("alice", "/tmp/"+strconv.Itoa(i))
		r, err := s.Ask(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Approve(ctx, r.ID, alice()); err != nil {
			b.Fatal(err)
		}
		if r, err := s.Ask(ctx, c); err != nil || r.State != approval.Used {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkWaitWake measures a decision releasing a call that waits on
// another replica (two Services sharing a store and an in-process
// notifier), the waiter already blocked, plus the asks around it.
func BenchmarkWaitWake(b *testing.B) {
	store := approval.NewMemStore(&approval.MemOptions{MaxRequests: 1 << 20})
	bus := approval.NewLocalNotifier()
	a := approval.New(store, &approval.Options{Notifier: bus})
	blocked := make(chan struct{}, 1)
	w := approval.New(&hookStore{Store: store, afterGet: func(r *approval.Request) {
		if r.State == approval.Pending {
			blocked <- struct{}{}
		}
	}}, &approval.Options{Notifier: bus})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		c := deleteCall("alice", "/tmp/"+strconv.Itoa(i))
		r, err := a.Ask(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan approval.State)
		go func() {
			got, _ := w.Wait(ctx, r.ID)
			done <- got.State
		}()
		<-blocked
		if _, err := a.Approve(ctx, r.ID, alice()); err != nil {
			b.Fatal(err)
		}
		if st := <-done; st != approval.Approved {
			b.Fatal(st)
		}
		if r, err := a.Ask(ctx, c); err != nil || r.State != approval.Used {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkPreview measures the preview of typical arguments.
func BenchmarkPreview(b *testing.B) {
	args := json.RawMessage(`{"action":"delete","path":"/srv/data/reports/2026/q3.csv","recursive":false,` +
		`"options":{"force":true,"token":"sk-123","tags":["a","b","c"]},"note":"quarterly cleanup"}`)
	for b.Loop() {
		if _, _, err := approval.Preview(args, []string{"action", "path"}, nil, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}
