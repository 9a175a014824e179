//go:build integration

package redissessions_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/page/redissessions"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

// replicas returns two stores on one Redis, as two replicas have them.
func replicas(t *testing.T, perPrincipal int) (a, b *redissessions.Store) {
	t.Helper()
	prefix := redistest.Prefix(t)
	open := func() *redissessions.Store {
		c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
		t.Cleanup(func() { c.Close() })
		return redissessions.New(c, &redissessions.Options{Prefix: prefix, PerPrincipal: perPrincipal})
	}
	return open(), open()
}

func session(principal string, admin bool, created time.Time) page.Session {
	return page.Session{Identity: page.Identity{Principal: principal, Admin: admin}, CSRF: "csrf-" + principal,
		Created: created, Expires: created.Add(time.Hour)}
}

// TestSharedAcrossReplicas signs in on one replica, is signed in on the
// other, and signs out there for both.
func TestSharedAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a, b := replicas(t, 0)
	now := time.Now()
	s := session("alice", false, now)
	if err := a.Create(ctx, "k1", s); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "k1", now)
	if err != nil || got.Identity != s.Identity || got.CSRF != s.CSRF || !got.Expires.Equal(s.Expires) {
		t.Fatalf("the other replica reads %+v, %v; want %+v", got, err, s)
	}
	if _, err := b.Get(ctx, "k1", s.Expires); !errors.Is(err, page.ErrNoSession) {
		t.Errorf("at its expiry the session is %v, want ErrNoSession", err)
	}
	if err := b.Delete(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "k1", now); !errors.Is(err, page.ErrNoSession) {
		t.Errorf("signed out on one replica, the other still has the session (%v)", err)
	}
	if err := a.Delete(ctx, "k1"); err != nil {
		t.Errorf("a second sign-out: %v", err)
	}
}

// TestBoundedPerPrincipal checks that a principal's sign-ins past the
// bound drop its oldest sessions only, and never an admin's.
func TestBoundedPerPrincipal(t *testing.T) {
	ctx := context.Background()
	a, b := replicas(t, 3)
	now := time.Now()
	if err := a.Create(ctx, "admin", session("alice", true, now)); err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, "bob", session("bob", false, now)); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		store := a
		if i%2 == 1 {
			store = b
		}
		if err := store.Create(ctx, "alice"+strconv.Itoa(i), session("alice", false, now.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]bool{"alice0": false, "alice1": false, "alice2": true, "alice3": true, "alice4": true, "admin": true, "bob": true} {
		_, err := b.Get(ctx, key, now)
		if have := err == nil; have != want {
			t.Errorf("session %s kept %v (%v), want %v", key, have, err, want)
		}
	}
}

// TestSpendOnceAcrossReplicas: a sign-in token used on one replica is
// refused on the other, and an expired one is never taken.
func TestSpendOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a, b := replicas(t, 0)
	var _ page.SpentTokens = a
	until := time.Now().Add(time.Hour)
	if first, err := a.Spend(ctx, "t1", until); err != nil || !first {
		t.Fatalf("the first use: %v, %v", first, err)
	}
	if first, err := b.Spend(ctx, "t1", until); err != nil || first {
		t.Errorf("the same token on the other replica: %v, %v", first, err)
	}
	if first, err := b.Spend(ctx, "t2", time.Now().Add(-time.Second)); err != nil || first {
		t.Errorf("an expired token: %v, %v", first, err)
	}
}
