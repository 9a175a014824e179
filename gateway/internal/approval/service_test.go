package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/hints"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bound is how long a test waits for something that must happen before it
// fails; it is a limit, never a synchronization.
const bound = 30 * time.Second

func deleteCall(principal, path string) approval.Call {
	return approval.Call{
		Principal: principal, Server: "files", Tool: "manage_files",
		Arguments: json.RawMessage(`{"action":"delete","path":"` + path + `"}`),
		Effect:    hints.EffectDelete, Reason: "deletes a file", Matter: []string{"action", "path"},
	}
}

func alice() approval.Approver { return approval.Approver{Principal: "alice", Name: "Alice"} }

func mustAsk(t *testing.T, s *approval.Service, c approval.Call, want approval.State) *approval.Request {
	t.Helper()
	r, err := s.Ask(t.Context(), c)
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if r.State != want {
		t.Fatalf("Ask: state %s, want %s", r.State, want)
	}
	return r
}

// TestApprovalIsSingleUse: a pending request, approved by its principal,
// lets exactly one retry with the same arguments run; the next retry asks
// again.
func TestApprovalIsSingleUse(t *testing.T) {
	t.Parallel()
	s := approval.New(nil, nil)
	ctx := t.Context()
	c := deleteCall("alice", "/tmp/a")
	r := mustAsk(t, s, c, approval.Pending)
	if again := mustAsk(t, s, c, approval.Pending); again.ID != r.ID {
		t.Errorf("a retry before the decision opened request %s, want the pending %s", again.ID, r.ID)
	}
	got, err := s.Approve(ctx, r.ID, alice())
	if err != nil || got.State != approval.Approved || got.DecidedBy != alice() || got.Decided.IsZero() {
		t.Fatalf("Approve = %+v, %v", got, err)
	}
	used := mustAsk(t, s, c, approval.Used)
	if used.ID != r.ID || used.DecidedBy.String() != "Alice" || used.UsedAt.IsZero() {
		t.Errorf("retry consumed %+v", used)
	}
	next := mustAsk(t, s, c, approval.Pending)
	if next.ID == r.ID {
		t.Error("a second retry reused the approval")
	}
	if got, err := s.Get(ctx, r.ID, "alice"); err != nil || got.State != approval.Used {
		t.Errorf("Get after use = %+v, %v; want used", got, err)
	}
}

// TestRetryMatchesOnlyTheSameCall: the approval binds principal, server,
// tool and the arguments' digest (not their spelling).
func TestRetryMatchesOnlyTheSameCall(t *testing.T) {
	t.Parallel()
	s := approval.New(nil, nil)
	c := deleteCall("alice", "/tmp/a")
	r := mustAsk(t, s, c, approval.Pending)
	if _, err := s.Approve(t.Context(), r.ID, alice()); err != nil {
		t.Fatal(err)
	}
	others := map[string]approval.Call{
		"other arguments": deleteCall("alice", "/tmp/b"),
		"other principal": deleteCall("bob", "/tmp/a"),
	}
	otherTool := c
	otherTool.Tool = "manage_files2"
	others["other tool"] = otherTool
	otherServer := c
	otherServer.Server = "files2"
	others["other server"] = otherServer
	for name, o := range others {
		if got := mustAsk(t, s, o, approval.Pending); got.ID == r.ID {
			t.Errorf("%s: matched the approval of another call", name)
		}
	}
	respelled := c
	respelled.Arguments = json.RawMessage(` { "path" : "/tmp/a", "action": "delete" } `)
	if got := mustAsk(t, s, respelled, approval.Used); got.ID != r.ID {
		t.Errorf("the same arguments in another order consumed %s, want %s", got.ID, r.ID)
	}
}

// TestDenyAnswersRetries: a denied call is not run, and its retries are
// told so until the request would have expired.
func TestDenyAnswersRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := approval.New(nil, &approval.Options{TTL: time.Minute})
		c := deleteCall("alice", "/tmp/a")
		r := mustAsk(t, s, c, approval.Pending)
		if got, err := s.Deny(t.Context(), r.ID, alice()); err != nil || got.State != approval.Denied {
			t.Fatalf("Deny = %+v, %v", got, err)
		}
		if got := mustAsk(t, s, c, approval.Denied); got.ID != r.ID {
			t.Errorf("retry after the denial got %s", got.ID)
		}
		if _, err := s.Approve(t.Context(), r.ID, alice()); !errors.Is(err, approval.ErrNotPending) {
			t.Errorf("approving a denied request: %v, want ErrNotPending", err)
		}
		time.Sleep(time.Minute)
		if got := mustAsk(t, s, c, approval.Pending); got.ID == r.ID {
			t.Error("after the request's time the denial still answered")
		}
	})
}

// TestApproverActsOnlyForTheirPrincipal: nobody decides, sees or lists
// another principal's request, unless the deployer named them an admin.
func TestApproverActsOnlyForTheirPrincipal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := approval.New(nil, &approval.Options{Admins: []string{"root"}})
	r := mustAsk(t, s, deleteCall("alice", "/tmp/a"), approval.Pending)
	for _, by := range []approval.Approver{{Principal: "bob"}, {Principal: "", Name: "operator"}, {Principal: "Alice"}, {Principal: "bob", Name: "alice"}} {
		if _, err := s.Approve(ctx, r.ID, by); !errors.Is(err, approval.ErrForbidden) {
			t.Errorf("Approve by %+v: %v, want ErrForbidden", by, err)
		}
		if _, err := s.Deny(ctx, r.ID, by); !errors.Is(err, approval.ErrForbidden) {
			t.Errorf("Deny by %+v: %v, want ErrForbidden", by, err)
		}
		if _, err := s.Get(ctx, r.ID, by.Principal); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Get by %+v: %v, want ErrNotFound", by, err)
		}
		if l, _ := s.List(ctx, by.Principal, 0); len(l) != 0 {
			t.Errorf("List by %+v shows %d requests", by, len(l))
		}
	}
	if got, _ := s.Get(ctx, r.ID, "alice"); got.State != approval.Pending {
		t.Fatalf("refused decisions changed the request: %+v", got)
	}
	if l, _ := s.List(ctx, "root", 0); len(l) != 1 {
		t.Errorf("the admin lists %d requests, want 1", len(l))
	}
	root := approval.Approver{Principal: "root", Name: "security on-call"}
	got, err := s.Approve(ctx, r.ID, root)
	if err != nil || got.DecidedBy != root {
		t.Fatalf("admin Approve = %+v, %v", got, err)
	}
	if used := mustAsk(t, s, deleteCall("alice", "/tmp/a"), approval.Used); used.DecidedBy.String() != "security on-call" {
		t.Errorf("audited approver %q", used.DecidedBy)
	}
}

// TestForgedAndReplayedIDsRefused: an id that is malformed, unknown, bound
// to another call, already decided or already used is refused.
func TestForgedAndReplayedIDsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := approval.New(nil, nil)
	c := deleteCall("alice", "/tmp/a")
	r := mustAsk(t, s, c, approval.Pending)
	forged := []string{"", "x", "../approvals", r.ID + "A", r.ID[:21] + "!", "AAAAAAAAAAAAAAAAAAAAAA"}
	for _, id := range forged {
		if _, err := s.Approve(ctx, id, alice()); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Approve(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := s.Resume(ctx, id, c, 0); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Resume(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := s.Wait(ctx, id); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Wait(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.Resume(ctx, r.ID, deleteCall("alice", "/etc/passwd"), 0); !errors.Is(err, approval.ErrMismatch) {
		t.Errorf("Resume with other arguments: %v, want ErrMismatch", err)
	}
	if _, err := s.Resume(ctx, r.ID, deleteCall("bob", "/tmp/a"), 0); !errors.Is(err, approval.ErrMismatch) {
		t.Errorf("Resume by another principal: %v, want ErrMismatch", err)
	}
	if _, err := s.Approve(ctx, r.ID, alice()); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Approve(ctx, r.ID, alice()); !errors.Is(err, approval.ErrNotPending) || got.State != approval.Approved {
		t.Errorf("replayed Approve = %+v, %v; want ErrNotPending with the request", got, err)
	}
	if _, err := s.Deny(ctx, r.ID, alice()); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("Deny after Approve: %v, want ErrNotPending", err)
	}
	if got, err := s.Resume(ctx, r.ID, c, 0); err != nil || got.State != approval.Used {
		t.Fatalf("Resume = %+v, %v; want used", got, err)
	}
	if _, err := s.Resume(ctx, r.ID, c, 0); !errors.Is(err, approval.ErrUsed) {
		t.Errorf("replayed Resume: %v, want ErrUsed", err)
	}
}

// TestExpiry: an undecided request lapses after TTL, an unused approval
// after UseWindow; neither can be decided or used afterwards.
func TestExpiry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := approval.New(nil, &approval.Options{TTL: time.Minute, UseWindow: 30 * time.Second})
		c := deleteCall("alice", "/tmp/a")
		r := mustAsk(t, s, c, approval.Pending)
		time.Sleep(time.Minute)
		if got, err := s.Approve(ctx, r.ID, alice()); !errors.Is(err, approval.ErrNotPending) || got.State != approval.Expired {
			t.Errorf("Approve after TTL = %+v, %v; want expired, ErrNotPending", got, err)
		}
		if got, err := s.Resume(ctx, r.ID, c, 0); err != nil || got.State != approval.Expired {
			t.Errorf("Resume after TTL = %+v, %v; want expired", got, err)
		}
		r2 := mustAsk(t, s, c, approval.Pending)
		if r2.ID == r.ID {
			t.Fatal("an expired request answered the retry")
		}
		time.Sleep(50 * time.Second) // r2 is still pending
		if _, err := s.Approve(ctx, r2.ID, alice()); err != nil {
			t.Fatalf("Approve within TTL: %v", err)
		}
		time.Sleep(30 * time.Second) // the approval's window ends unused
		if got, _ := s.Get(ctx, r2.ID, "alice"); got.State != approval.Expired {
			t.Errorf("approval unused past its window reads %s, want expired", got.State)
		}
		if got := mustAsk(t, s, c, approval.Pending); got.ID == r2.ID {
			t.Error("a lapsed approval was used")
		}
	})
}

// TestUseWindowCountsFromTheApproval: an approval given just before the
// request would have lapsed still leaves the whole window for the retry.
func TestUseWindowCountsFromTheApproval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := approval.New(nil, &approval.Options{TTL: time.Minute, UseWindow: 30 * time.Second})
		c := deleteCall("alice", "/tmp/a")
		r := mustAsk(t, s, c, approval.Pending)
		time.Sleep(59 * time.Second)
		if _, err := s.Approve(t.Context(), r.ID, alice()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(29 * time.Second)
		mustAsk(t, s, c, approval.Used)
	})
}

// TestWait: a waiting call returns on the decision, at expiry, or when its
// context ends.
func TestWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		decide func(s *approval.Service, id string)
		want   approval.State
	}{
		{"approved", func(s *approval.Service, id string) { _, _ = s.Approve(context.Background(), id, alice()) }, approval.Approved},
		{"denied", func(s *approval.Service, id string) { _, _ = s.Deny(context.Background(), id, alice()) }, approval.Denied},
		{"expired", func(*approval.Service, string) { time.Sleep(2 * time.Minute) }, approval.Expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := approval.New(nil, &approval.Options{TTL: time.Minute, Recheck: time.Hour})
				r := mustAsk(t, s, deleteCall("alice", "/tmp/a"), approval.Pending)
				done := make(chan *approval.Request)
				go func() {
					got, err := s.Wait(context.Background(), r.ID)
					if err != nil {
						t.Errorf("Wait: %v", err)
					}
					done <- got
				}()
				synctest.Wait() // the waiter is blocked
				tc.decide(s, r.ID)
				if got := <-done; got == nil || got.State != tc.want {
					t.Errorf("Wait returned %+v, want %s", got, tc.want)
				}
			})
		})
	}
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := approval.New(nil, nil)
			r := mustAsk(t, s, deleteCall("alice", "/tmp/a"), approval.Pending)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			got, err := s.Wait(ctx, r.ID)
			if !errors.Is(err, context.DeadlineExceeded) || got == nil || got.State != approval.Pending {
				t.Errorf("Wait = %+v, %v; want pending, deadline exceeded", got, err)
			}
		})
	})
}

// TestApprovalOnOneReplicaReleasesWaitOnAnother: two Services (replicas)
// share a store and a notifier; a call waits on one, a person approves on
// the other once the waiter has read the request as pending, and the wait
// returns through the notification (the recheck interval is an hour, far
// past the test's bound), after which the retry on the first replica runs
// once and the other replica cannot run it again.
func TestApprovalOnOneReplicaReleasesWaitOnAnother(t *testing.T) {
	t.Parallel()
	store := approval.NewMemStore(nil)
	bus := approval.NewLocalNotifier()
	a := approval.New(store, &approval.Options{Notifier: bus, Recheck: time.Hour})
	readPending := make(chan struct{})
	var once sync.Once
	watched := &hookStore{Store: store, afterGet: func(r *approval.Request) {
		if r.State == approval.Pending {
			once.Do(func() { close(readPending) })
		}
	}}
	b := approval.New(watched, &approval.Options{Notifier: bus, Recheck: time.Hour})
	c := deleteCall("alice", "/tmp/a")
	r := mustAsk(t, b, c, approval.Pending)

	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	done := make(chan *approval.Request, 1)
	go func() {
		got, err := b.Wait(ctx, r.ID)
		if err != nil {
			t.Errorf("Wait on replica b: %v", err)
		}
		done <- got
	}()
	<-readPending
	if _, err := a.Approve(t.Context(), r.ID, alice()); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got == nil || got.State != approval.Approved || got.DecidedBy != alice() {
		t.Fatalf("Wait on replica b returned %+v", got)
	}
	if used := mustAsk(t, b, c, approval.Used); used.ID != r.ID {
		t.Errorf("retry on replica b consumed %s", used.ID)
	}
	if again := mustAsk(t, a, c, approval.Pending); again.ID == r.ID {
		t.Error("replica a ran the same approval a second time")
	}
}

// hookStore runs a hook after each Get.
type hookStore struct {
	approval.Store
	afterGet func(*approval.Request)
}

func (h *hookStore) Get(ctx context.Context, id string, now time.Time) (*approval.Request, error) {
	r, err := h.Store.Get(ctx, id, now)
	if err == nil {
		h.afterGet(r)
	}
	return r, err
}

// hookNotifier runs hooks around Subscribe.
type hookNotifier struct {
	approval.Notifier
	beforeSubscribe, afterSubscribe func()
}

func (h *hookNotifier) Subscribe(ctx context.Context, topic string) (<-chan []byte, func()) {
	if h.beforeSubscribe != nil {
		h.beforeSubscribe()
	}
	ch, stop := h.Notifier.Subscribe(ctx, topic)
	if h.afterSubscribe != nil {
		h.afterSubscribe()
	}
	return ch, stop
}

// TestWaitSubscribesBeforeReading: a decision made while the waiter
// subscribes, and published before its subscription exists, is still
// seen, because the waiter reads the store after subscribing. Reading
// first would miss it and wait for the recheck, an hour away.
func TestWaitSubscribesBeforeReading(t *testing.T) {
	t.Parallel()
	store := approval.NewMemStore(nil)
	bus := approval.NewLocalNotifier()
	a := approval.New(store, &approval.Options{Notifier: bus})
	r := mustAsk(t, a, deleteCall("alice", "/tmp/a"), approval.Pending)
	racing := &hookNotifier{Notifier: bus, beforeSubscribe: func() {
		if _, err := a.Approve(context.Background(), r.ID, alice()); err != nil {
			t.Errorf("Approve: %v", err)
		}
	}}
	b := approval.New(store, &approval.Options{Notifier: racing, Recheck: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	got, err := b.Wait(ctx, r.ID)
	if err != nil || got.State != approval.Approved {
		t.Fatalf("Wait = %+v, %v; want approved", got, err)
	}
}

// lossyNotifier delivers nothing, and its subscriptions end at once when
// closed is set.
type lossyNotifier struct {
	closed bool
	mu     sync.Mutex
	subs   int
}

func (l *lossyNotifier) Publish(context.Context, string, []byte) error {
	return errors.New("connection refused")
}

func (l *lossyNotifier) Subscribe(ctx context.Context, _ string) (<-chan []byte, func()) {
	l.mu.Lock()
	l.subs++
	l.mu.Unlock()
	ch := make(chan []byte)
	if l.closed {
		close(ch)
		return ch, func() {}
	}
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// TestLostNotificationsFallBackToRecheck: when notifications are lost
// (publication fails, or the subscription drops at once) a waiting call
// still sees the decision at its next recheck, and a notifier that keeps
// failing is not resubscribed in a loop.
func TestLostNotificationsFallBackToRecheck(t *testing.T) {
	// Not parallel: it bounds time.
	for _, closed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			bus := &lossyNotifier{closed: closed}
			s := approval.New(nil, &approval.Options{Notifier: bus, Recheck: 2 * time.Second})
			r := mustAsk(t, s, deleteCall("alice", "/tmp/a"), approval.Pending)
			done := make(chan *approval.Request)
			go func() {
				got, _ := s.Wait(context.Background(), r.ID)
				done <- got
			}()
			synctest.Wait()
			start := time.Now()
			if _, err := s.Approve(context.Background(), r.ID, alice()); err != nil {
				t.Fatal(err)
			}
			got := <-done
			if got.State != approval.Approved {
				t.Fatalf("closed=%v: Wait returned %s", closed, got.State)
			}
			if waited := time.Since(start); waited > 2*time.Second {
				t.Errorf("closed=%v: seen after %v, want within the 2s recheck", closed, waited)
			}
			bus.mu.Lock()
			defer bus.mu.Unlock()
			if bus.subs > 2 {
				t.Errorf("closed=%v: subscribed %d times within one recheck interval", closed, bus.subs)
			}
		})
	}
}

// TestResume: the retry of a URL-mode elicitation waits briefly for the
// decision and runs once approved.
func TestResume(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := approval.New(nil, nil)
		c := deleteCall("alice", "/tmp/a")
		r := mustAsk(t, s, c, approval.Pending)
		got, err := s.Resume(ctx, r.ID, c, 10*time.Second)
		if err != nil || got.State != approval.Pending {
			t.Fatalf("Resume with no decision = %+v, %v; want pending", got, err)
		}
		go func() {
			time.Sleep(3 * time.Second)
			if _, err := s.Approve(ctx, r.ID, alice()); err != nil {
				t.Errorf("Approve: %v", err)
			}
		}()
		got, err = s.Resume(ctx, r.ID, c, 10*time.Second)
		if err != nil || got.State != approval.Used {
			t.Fatalf("Resume with an approval during the wait = %+v, %v; want used", got, err)
		}
		d := mustAsk(t, s, c, approval.Pending)
		if _, err := s.Deny(ctx, d.ID, alice()); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Resume(ctx, d.ID, c, time.Second); err != nil || got.State != approval.Denied {
			t.Errorf("Resume of a denied request = %+v, %v", got, err)
		}
	})
}

// TestConcurrentRetriesRunOnce: many retries of an approved call on two
// replicas at once: exactly one runs.
func TestConcurrentRetriesRunOnce(t *testing.T) {
	t.Parallel()
	store := approval.NewMemStore(nil)
	bus := approval.NewLocalNotifier()
	replicas := []*approval.Service{approval.New(store, &approval.Options{Notifier: bus}), approval.New(store, &approval.Options{Notifier: bus})}
	c := deleteCall("alice", "/tmp/a")
	r := mustAsk(t, replicas[0], c, approval.Pending)
	if _, err := replicas[1].Approve(t.Context(), r.ID, alice()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	used, pending := 0, map[string]bool{}
	for i := range 32 {
		wg.Go(func() {
			got, err := replicas[i%2].Ask(context.Background(), c)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch got.State {
			case approval.Used:
				used++
			case approval.Pending:
				pending[got.ID] = true
			}
		})
	}
	wg.Wait()
	if used != 1 || len(pending) != 1 {
		t.Errorf("%d retries ran and %d new requests opened; want 1 and 1", used, len(pending))
	}
}

// TestStoreBounds: one principal cannot open more than MaxOpen requests;
// lapsed requests make room for new ones, open ones never do.
func TestStoreBounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := approval.NewMemStore(&approval.MemOptions{MaxRequests: 3, MaxOpen: 2, Retain: time.Minute})
		s := approval.New(store, &approval.Options{TTL: time.Minute})
		mustAsk(t, s, deleteCall("alice", "/1"), approval.Pending)
		mustAsk(t, s, deleteCall("alice", "/2"), approval.Pending)
		if _, err := s.Ask(t.Context(), deleteCall("alice", "/3")); !errors.Is(err, approval.ErrFull) {
			t.Errorf("third open request of one principal: %v, want ErrFull", err)
		}
		mustAsk(t, s, deleteCall("bob", "/1"), approval.Pending)
		if _, err := s.Ask(t.Context(), deleteCall("carol", "/1")); !errors.Is(err, approval.ErrFull) {
			t.Errorf("fourth request in a store of three: %v, want ErrFull", err)
		}
		time.Sleep(time.Minute) // all lapse; kept for the history
		mustAsk(t, s, deleteCall("carol", "/1"), approval.Pending)
		if l, _ := store.List(t.Context(), approval.ListFilter{All: true}, time.Now()); len(l) != 3 {
			t.Errorf("store holds %d requests, want its bound 3", len(l))
		}
	})
}

// TestAskRefusesBadInput: invalid JSON arguments and oversized names are
// errors, never stored.
func TestAskRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := approval.New(nil, nil)
	bad := deleteCall("alice", "/tmp/a")
	bad.Arguments = json.RawMessage(`{"path":`)
	if _, err := s.Ask(t.Context(), bad); err == nil {
		t.Error("invalid JSON arguments were accepted")
	}
	long := deleteCall(string(make([]byte, 2000)), "/tmp/a")
	if _, err := s.Ask(t.Context(), long); err == nil {
		t.Error("a 2000-byte principal was accepted")
	}
	if l, _ := s.List(t.Context(), "alice", 0); len(l) != 0 {
		t.Errorf("bad calls stored %d requests", len(l))
	}
}

// TestNotShowableIsNotApprovable: a call whose arguments the page cannot
// show whole opens no request and says why; a request kept with cut
// arguments (from an older version) cannot be approved, only denied.
func TestNotShowableIsNotApprovable(t *testing.T) {
	t.Parallel()
	s := approval.New(nil, &approval.Options{ShowBytes: 1024})
	c := deleteCall("alice", strings.Repeat("d/", 600))
	if r, err := s.Ask(t.Context(), c); !errors.Is(err, approval.ErrNotShowable) || r != nil || !strings.Contains(err.Error(), "more than the 1 KiB") {
		t.Fatalf("Ask = %v, %v", r, err)
	}
	if list, _ := s.List(t.Context(), "alice", 0); len(list) != 0 {
		t.Errorf("a request was opened: %+v", list[0])
	}

	store := approval.NewMemStore(nil)
	now := time.Now()
	cut, _, err := store.Open(t.Context(), &approval.Request{ID: "AAAAAAAAAAAAAAAAAAAAAA", Key: approval.Key{Principal: "alice", Server: "files", Tool: "t"},
		Args: []approval.Arg{{Name: "path", Value: "logs/old/x/../", Clipped: true}}, State: approval.Pending, Created: now, Expires: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	s = approval.New(store, nil)
	if _, err := s.Approve(t.Context(), cut.ID, alice()); !errors.Is(err, approval.ErrNotShowable) {
		t.Errorf("approving a cut request: %v", err)
	}
	if r, err := s.Deny(t.Context(), cut.ID, alice()); err != nil || r.State != approval.Denied {
		t.Errorf("denying it: %v, %v", r, err)
	}
}
