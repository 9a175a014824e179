package disclose

import (
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// TestLimiterSurvivesAFloodOfKeys: once the server tracks as many scopes
// as it may, each busy, a new scope is still limited. Before the cache was
// bounded by eviction, a scope that found the map full got a fresh limiter
// on every read, that is no limit at all.
func TestLimiterSurvivesAFloodOfKeys(t *testing.T) {
	s := New(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v0"}, nil), &Options{FetchRate: rate.Every(time.Hour), FetchBurst: 1})
	for i := range maxLimiters {
		if _, ok := s.allow(fmt.Sprint("flood-", i)); !ok {
			t.Fatalf("the first read of scope %d was refused", i)
		}
	}
	if _, ok := s.allow("late"); !ok {
		t.Fatal("the first read of a new scope was refused")
	}
	for i := range 3 {
		if _, ok := s.allow("late"); ok {
			t.Fatalf("read %d of a new scope past its burst of 1 was allowed", i+2)
		}
	}
	if n := s.limiters.len(); n > maxLimiters {
		t.Errorf("%d limiters kept, more than %d", n, maxLimiters)
	}
}

// TestLimiterKeepsTheKeyInUse: a scope that keeps reading stays limited
// while many more new scopes than the cache holds come and go.
func TestLimiterKeepsTheKeyInUse(t *testing.T) {
	now := time.Unix(1e9, 0)
	c := newLimiterCache(rate.Every(time.Hour), 2, 8)
	for range 2 {
		if _, ok := c.allow("hot", now); !ok {
			t.Fatal("hot: a read within its burst was refused")
		}
	}
	for i := range 100 {
		if _, ok := c.allow(fmt.Sprint("new-", i), now); !ok {
			t.Fatalf("new-%d: a first read was refused", i)
		}
		if wait, ok := c.allow("hot", now); ok || wait <= 0 {
			t.Fatalf("after %d new scopes the hot scope was allowed (wait %v)", i+1, wait)
		}
		if n := c.len(); n > 8 {
			t.Fatalf("%d limiters kept, more than 8", n)
		}
	}
}

// TestLimiterForgetsIdleKeys: a limiter whose bucket has refilled is
// dropped when a new scope comes, since a fresh one is the same; the cache
// does not grow with scopes that went quiet.
func TestLimiterForgetsIdleKeys(t *testing.T) {
	now := time.Unix(1e9, 0)
	c := newLimiterCache(rate.Every(time.Second), 1, 100)
	for i := range 10 {
		c.allow(fmt.Sprint("k", i), now)
	}
	if n := c.len(); n != 10 {
		t.Fatalf("%d limiters after 10 scopes, want 10", n)
	}
	later := now.Add(time.Minute)
	c.allow("new", later)
	if n := c.len(); n != 1 {
		t.Errorf("%d limiters after the others went idle, want 1", n)
	}
	// A refused read leaves the bucket as it was.
	c.allow("new", later)
	if wait, ok := c.allow("new", later); ok || wait <= 0 || wait > time.Second {
		t.Errorf("third read at once: wait %v ok %v, want refused for at most 1s", wait, ok)
	}
}
