//go:build integration

package redisstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway/internal/redisstore"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

func client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", redistest.Addr(t), err)
	}
	return c
}

// TestStore: grants, lookups, isolation between scopes and prefixes,
// expiry set by Redis and extended by each grant, forgetting.
func TestStore(t *testing.T) {
	t.Parallel()
	c := client(t)
	prefix := redistest.Prefix(t)
	s := redisstore.New(c, &redisstore.Options{Prefix: prefix})
	ctx := t.Context()
	if err := s.Grant(ctx, "principal:alice", map[string]string{"echo": "v1", "get_data": "v2"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Lookup(ctx, "principal:alice", "echo"); err != nil || !ok || v != "v1" {
		t.Fatalf("lookup: %q %v %v", v, ok, err)
	}
	for _, miss := range [][2]string{{"principal:alice", "other"}, {"principal:bob", "echo"}} {
		if _, ok, err := s.Lookup(ctx, miss[0], miss[1]); ok || err != nil {
			t.Errorf("%v: granted %v, err %v", miss, ok, err)
		}
	}
	// Another prefix is another deployment.
	if _, ok, _ := redisstore.New(c, &redisstore.Options{Prefix: prefix + "x:"}).Lookup(ctx, "principal:alice", "echo"); ok {
		t.Error("another prefix sees the grant")
	}
	// Redis holds the expiry; a grant extends it.
	ttl := c.PTTL(ctx, prefix+"principal:alice").Val()
	if ttl <= 0 || ttl > time.Hour {
		t.Errorf("PTTL %v", ttl)
	}
	_ = s.Grant(ctx, "principal:alice", map[string]string{"echo": "v3"}, 2*time.Hour)
	if ttl := c.PTTL(ctx, prefix+"principal:alice").Val(); ttl <= time.Hour {
		t.Errorf("PTTL after a second grant %v", ttl)
	}
	if v, _, _ := s.Lookup(ctx, "principal:alice", "echo"); v != "v3" {
		t.Errorf("regrant: %q", v)
	}
	if err := s.Forget(ctx, "principal:alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Lookup(ctx, "principal:alice", "get_data"); ok {
		t.Error("forgotten scope still granted")
	}
	if err := s.Grant(ctx, "k", nil, time.Hour); err != nil {
		t.Errorf("empty grant: %v", err)
	}
}

// replica is one server of a deployment: its own mcp.Server, disclosure
// layer and HTTP endpoint, sharing the store.
func replica(t *testing.T, store disclose.Store) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "v0"}, nil)
	ds := disclose.New(s, &disclose.Options{Store: store})
	ds.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes back the input string.", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Message string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil
		}, nil)
	h := endpoint.NewHandler(s, nil)
	// ?token=NAME authenticates as principal NAME through the SDK's
	// bearer-token middleware.
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(h)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("token"); tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
			authed.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestReplicasShareState: under 2026-07-28 a description fetched through
// one replica authorizes calls through another, for anonymous requests
// (one shared scope) and per principal; another deployment prefix sees
// nothing.
func TestReplicasShareState(t *testing.T) {
	t.Parallel()
	c := client(t)
	prefix := redistest.Prefix(t)
	a := replica(t, redisstore.New(c, &redisstore.Options{Prefix: prefix}))
	b := replica(t, redisstore.New(c, &redisstore.Options{Prefix: prefix}))
	other := replica(t, redisstore.New(c, &redisstore.Options{Prefix: prefix + "other:"}))
	callEcho := func(url string) map[string]any {
		r := wiretest.Stateless(url, nil).Call(t, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}})
		if r.Error != nil {
			t.Fatalf("call: %+v", r.Error)
		}
		return r.Result
	}
	if res := callEcho(b); res["isError"] != true {
		t.Fatalf("b before any fetch: %v", res)
	}
	r := wiretest.Stateless(a, nil).Call(t, "resources/read", map[string]any{"uri": disclose.DefaultURI + "?tools=echo"})
	if r.Error != nil {
		t.Fatalf("read through a: %+v", r.Error)
	}
	if res := callEcho(b); res["isError"] == true {
		t.Fatalf("b after a fetch through a: %v", res)
	}
	if res := callEcho(other); res["isError"] != true {
		t.Fatalf("another deployment: %v", res)
	}

	// Principals: alice fetches through a and calls through b; bob is
	// still refused on both.
	if res := callEcho(b + "?token=alice"); res["isError"] != true {
		t.Fatalf("alice before her fetch: %v", res)
	}
	r = wiretest.Stateless(a+"?token=alice", nil).Call(t, "resources/read", map[string]any{"uri": disclose.DefaultURI + "?tools=echo"})
	if r.Error != nil {
		t.Fatalf("alice's read through a: %+v", r.Error)
	}
	if res := callEcho(b + "?token=alice"); res["isError"] == true {
		t.Fatalf("alice through b after her fetch through a: %v", res)
	}
	for _, url := range []string{a, b} {
		if res := callEcho(url + "?token=bob"); res["isError"] != true {
			t.Fatalf("bob through %s: %v", url, res)
		}
	}
}
