package vault_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
	"golang.org/x/oauth2"
)

// refresher counts its calls and returns a new token without a refresh
// token (the old one is kept), valid an hour past now.
type refresher struct {
	calls   atomic.Int32
	now     func() time.Time
	entered chan struct{} // if set, the first call closes it
	release chan struct{} // if set, a call waits for it to close
}

func (r *refresher) refresh(ctx context.Context, c *vault.Connection) (*oauth2.Token, error) {
	if r.calls.Add(1) == 1 && r.entered != nil {
		close(r.entered)
	}
	if r.release != nil {
		<-r.release
	}
	if c.Token.RefreshToken == "" {
		return nil, errors.New("no refresh token")
	}
	return &oauth2.Token{AccessToken: "new", TokenType: "Bearer", Expiry: r.now().Add(time.Hour)}, nil
}

// TestRefreshOnce: two replicas, many callers each, an expired token: one
// refresh, and every caller gets its token.
func TestRefreshOnce(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		replicas := []*vault.Vault{
			open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now}),
			open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now}),
		}
		if err := replicas[0].Put(ctx, connection("alice", "files", "old", clk.Now().Add(-time.Minute))); err != nil {
			t.Fatal(err)
		}
		r := &refresher{now: clk.Now, release: make(chan struct{})}
		const perReplica = 8
		var wg sync.WaitGroup
		var started sync.WaitGroup
		results := make([]*vault.Connection, 2*perReplica)
		errs := make([]error, len(results))
		for i := range results {
			started.Add(1)
			wg.Go(func() {
				started.Done()
				results[i], errs[i] = replicas[i%2].Refresh(ctx, "alice", "files", time.Minute, r.refresh)
			})
		}
		started.Wait()
		close(r.release)
		wg.Wait()
		if n := r.calls.Load(); n != 1 {
			t.Errorf("the refresh function ran %d times, want once", n)
		}
		for i, c := range results {
			if errs[i] != nil {
				t.Errorf("caller %d: %v", i, errs[i])
				continue
			}
			if c.Token.AccessToken != "new" || c.Token.RefreshToken != "refresh-old" || c.Status != vault.Connected {
				t.Errorf("caller %d got %+v, want the new token with the old refresh token", i, c.Token)
			}
		}
		c, err := replicas[1].Get(ctx, "alice", "files")
		if err != nil || c.Token.AccessToken != "new" || !c.Token.Expiry.Equal(clk.Now().Add(time.Hour)) {
			t.Errorf("stored after the refresh: %+v, %v", c, err)
		}
	})
}

// TestRefreshReadsUnderLock: a replica that read the expired token before
// another refreshed it finds the new one under the lock and does not
// refresh again.
func TestRefreshReadsUnderLock(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		a := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		b := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		if err := a.Put(ctx, connection("alice", "files", "old", clk.Now().Add(-time.Minute))); err != nil {
			t.Fatal(err)
		}
		r := &refresher{now: clk.Now}
		if _, err := a.Refresh(ctx, "alice", "files", time.Minute, r.refresh); err != nil {
			t.Fatal(err)
		}
		c, err := b.RefreshUnderLock(ctx, "alice", "files", time.Minute, r.refresh)
		if err != nil || c.Token.AccessToken != "new" {
			t.Fatalf("the other replica got %+v, %v", c, err)
		}
		if n := r.calls.Load(); n != 1 {
			t.Errorf("the refresh function ran %d times, want once", n)
		}
	})
}

func TestRefreshNotNeeded(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		r := &refresher{now: clk.Now}
		for _, c := range []*vault.Connection{
			connection("alice", "valid", "v", clk.Now().Add(time.Hour)),
			connection("alice", "forever", "f", time.Time{}),
			connection("alice", "revoked", "r", clk.Now().Add(-time.Hour)),
		} {
			if err := v.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Mark(ctx, "alice", "revoked", vault.Revoked, "signed out"); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"valid", "forever"} {
			if c, err := v.Refresh(ctx, "alice", s, time.Minute, r.refresh); err != nil || c.Token.AccessToken == "new" {
				t.Errorf("Refresh of a valid token (%s): %+v, %v", s, c, err)
			}
		}
		if _, err := v.Refresh(ctx, "alice", "revoked", time.Minute, r.refresh); !errors.Is(err, vault.ErrRevoked) {
			t.Errorf("Refresh of a revoked connection: %v, want ErrRevoked", err)
		}
		if _, err := v.Refresh(ctx, "alice", "missing", time.Minute, r.refresh); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Refresh of a missing connection: %v, want ErrNotFound", err)
		}
		if n := r.calls.Load(); n != 0 {
			t.Errorf("the refresh function ran %d times, want never", n)
		}
		// Valid for an hour is not valid for two.
		if c, err := v.Refresh(ctx, "alice", "valid", 2*time.Hour, r.refresh); err != nil || c.Token.AccessToken != "new" {
			t.Errorf("Refresh wanting two hours: %+v, %v", c, err)
		}
	})
}

func TestRefreshFailure(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		if err := v.Put(ctx, connection("alice", "files", "old", clk.Now().Add(-time.Minute))); err != nil {
			t.Fatal(err)
		}
		// A passing failure (the authorization server is down) leaves
		// the connection as it was.
		down := errors.New("503 Service Unavailable")
		if _, err := v.Refresh(ctx, "alice", "files", time.Minute, func(context.Context, *vault.Connection) (*oauth2.Token, error) {
			return nil, down
		}); !errors.Is(err, down) {
			t.Fatalf("Refresh while the server is down: %v, want its error", err)
		}
		if c, err := v.Get(ctx, "alice", "files"); err != nil || c.Status != vault.Connected {
			t.Fatalf("after a passing failure: %+v, %v; want it still connected", c, err)
		}
		denied := fmt.Errorf("%w: invalid_grant: %s", vault.ErrRejected, strings.Repeat("the refresh token is no longer valid ", 100))
		_, err := v.Refresh(ctx, "alice", "files", time.Minute, func(context.Context, *vault.Connection) (*oauth2.Token, error) {
			return nil, denied
		})
		if !errors.Is(err, denied) {
			t.Fatalf("Refresh: %v, want the refresh function's error", err)
		}
		c, err := v.Get(ctx, "alice", "files")
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != vault.RefreshFailed || !strings.Contains(c.Reason, "invalid_grant: ") || len(c.Reason) > vault.MaxReasonLen+len("…") {
			t.Errorf("after a failed refresh: status %s, reason %q", c.Status, c.Reason)
		}
		if c.Token.AccessToken != "old" {
			t.Errorf("after a failed refresh the token is %q, want the old one kept", c.Token.AccessToken)
		}

		// No token is a failure too (left as it was); a later success
		// clears the mark.
		if _, err := v.Refresh(ctx, "alice", "files", time.Minute, func(context.Context, *vault.Connection) (*oauth2.Token, error) {
			return &oauth2.Token{}, nil
		}); err == nil || !strings.Contains(err.Error(), "no access token") {
			t.Errorf("Refresh giving an empty token: %v", err)
		}
		r := &refresher{now: clk.Now}
		if c, err := v.Refresh(ctx, "alice", "files", time.Minute, r.refresh); err != nil || c.Status != vault.Connected || c.Reason != "" {
			t.Fatalf("Refresh after a failure: %+v, %v", c, err)
		}
		if c, err := v.Get(ctx, "alice", "files"); err != nil || c.Status != vault.Connected || c.Reason != "" || c.Token.AccessToken != "new" {
			t.Errorf("stored after the refresh: %+v, %v", c, err)
		}
	})
}

// TestRefreshCallerGivesUp: a caller whose context ends returns at once;
// the refresh it started goes on for the others.
func TestRefreshCallerGivesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock()
	v := open(t, specs(t)["sqlite"], []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
	if err := v.Put(ctx, connection("alice", "files", "old", clk.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	r := &refresher{now: clk.Now, entered: make(chan struct{}), release: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := v.Refresh(cctx, "alice", "files", time.Minute, r.refresh)
		done <- err
	}()
	<-r.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that gave up: %v", err)
	}
	other := make(chan *vault.Connection, 1)
	go func() {
		c, _ := v.Refresh(ctx, "alice", "files", time.Minute, r.refresh)
		other <- c
	}()
	close(r.release)
	if c := <-other; c == nil || c.Token.AccessToken != "new" {
		t.Errorf("the other caller got %+v", c)
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("the refresh function ran %d times, want once", n)
	}
}

// TestRefreshBounded: the refresh function has a deadline within the
// lock's timeout.
func TestRefreshBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := open(t, specs(t)["sqlite"], []vault.Key{key("k1", 1)}, &vault.Options{LockTimeout: 10 * time.Second})
	if err := v.Put(ctx, connection("alice", "files", "old", time.Now().Add(-time.Minute))); err != nil {
		t.Fatal(err)
	}
	c, err := v.Refresh(ctx, "alice", "files", time.Minute, func(ctx context.Context, _ *vault.Connection) (*oauth2.Token, error) {
		deadline, ok := ctx.Deadline()
		if !ok || deadline.After(time.Now().Add(9*time.Second)) {
			return nil, fmt.Errorf("deadline %v (set: %t), want at most 9 s away", deadline, ok)
		}
		return &oauth2.Token{AccessToken: "new"}, nil
	})
	if err != nil || c.Token.AccessToken != "new" {
		t.Errorf("Refresh: %+v, %v", c, err)
	}
}
