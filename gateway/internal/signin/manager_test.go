package signin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// TestIdentityAfterRefusal: the gateway's own requests carry the grant of
// whoever connected the upstream first (a later connection does not
// displace them); when the upstream refuses that grant (401) it is marked
// revoked for every replica, the next connected principal's is used (also
// after a restart), and the refused principal must connect again. A 403
// for too little scope asks the principal to connect again until they
// have, here or on another replica.
func TestIdentityAfterRefusal(t *testing.T) {
	t.Parallel()
	now := time.Now().Add(-time.Hour)        // the connections were made an hour ago
	clock := func() time.Time { return now } // the test's goroutine only
	v := newVault(t, &vault.Options{Now: clock})
	for _, p := range []string{"alice", "bob", "carol"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: p, Server: "files", ClientID: "preflight",
			Token: oauth2.Token{AccessToken: "at-" + p, Expiry: time.Now().Add(2 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second) // created in this order
	}
	restart := func() *Manager {
		return newManager(t, []Server{{Name: "files", URL: "http://127.0.0.1:1/mcp"}}, Options{Store: v})
	}
	m := restart()
	ctx := t.Context()
	if p, ok := m.Identity(ctx, "files"); !ok || p != "alice" {
		t.Fatalf("Identity = %q, %v; want alice, who connected first", p, ok)
	}
	if a, err := m.Authorization(ctx, "files", "bob"); err != nil || a != "Bearer at-bob" {
		t.Fatalf("bob's Authorization = %q, %v", a, err)
	}

	m.Refused(ctx, "files", "alice", &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}})
	if p, ok := m.Identity(ctx, "files"); !ok || p != "bob" {
		t.Fatalf("after alice's grant was refused, Identity = %q, %v; want bob", p, ok)
	}
	var nc *NotConnectedError
	if err := m.Connected(WithPrincipal(ctx, "alice"), "files"); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "revoked") {
		t.Fatalf("alice after the refusal: %v", err)
	}
	if p, ok := restart().Identity(ctx, "files"); !ok || p != "bob" {
		t.Fatalf("after a restart, Identity = %q, %v; want bob", p, ok)
	}

	// Too little scope: bob connects again, then his calls go on.
	m.Refused(ctx, "files", "bob", &http.Response{StatusCode: http.StatusForbidden,
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="files:write"`}}})
	if err := m.Connected(WithPrincipal(ctx, "bob"), "files"); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "more") {
		t.Fatalf("bob after a 403 insufficient_scope: %v", err)
	}
	now = time.Now().Add(time.Minute) // after the refusal
	if err := v.Put(ctx, &vault.Connection{Principal: "bob", Server: "files", ClientID: "preflight", Scopes: "files:read files:write",
		Token: oauth2.Token{AccessToken: "at-bob-2", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err) // as another replica would, on bob's new sign-in there
	}
	if a, err := m.Authorization(ctx, "files", "bob"); err != nil || a != "Bearer at-bob-2" {
		t.Fatalf("bob connected again elsewhere: %q, %v", a, err)
	}
	if p, ok := m.Identity(ctx, "files"); !ok || p != "bob" {
		t.Fatalf("Identity = %q, %v; want bob still", p, ok)
	}
}

// TestPrincipal: whose grant a request carries: a shared server's for
// everybody, else the principal the call chain named; the gateway's own
// requests name nobody.
func TestPrincipal(t *testing.T) {
	t.Parallel()
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}, {Name: "wiki", URL: "https://wiki.example/mcp", Shared: true}}, Options{})
	ctx := t.Context()
	for _, c := range []struct {
		ctx    context.Context
		server string
		want   string
		ok     bool
	}{
		{WithPrincipal(ctx, "alice"), "files", "alice", true},
		{WithPrincipal(ctx, ""), "files", "", true}, // the local user
		{ctx, "files", "", false},                   // the gateway's own
		{WithPrincipal(ctx, "alice"), "wiki", "", true},
		{ctx, "wiki", "", true},
		{ctx, "nope", "", false},
	} {
		if p, ok := m.Principal(c.ctx, c.server); p != c.want || ok != c.ok {
			t.Errorf("Principal(%s) = %q, %v; want %q, %v", c.server, p, ok, c.want, c.ok)
		}
	}
}

// TestSharedGrant: a shared server's requests carry its one grant, whoever
// they are made for; a principal's stray grant of it is neither used nor
// listed, nor the local user's grant of a server each principal connects
// (which lists it only if they connected it first).
func TestSharedGrant(t *testing.T) {
	t.Parallel()
	v := newVault(t, nil)
	for _, g := range []struct{ principal, server string }{{"", "wiki"}, {"alice", "wiki"}, {"alice", "files"}, {"", "files"}, {"alice", "blog"}} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: g.principal, Server: g.server, ClientID: "gw",
			Token: oauth2.Token{AccessToken: "at-" + g.principal + "-" + g.server}}); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}, {Name: "wiki", URL: "https://wiki.example/mcp", Shared: true},
		{Name: "docs", URL: "https://docs.example/mcp"}, {Name: "blog", URL: "https://blog.example/mcp", Shared: true}}, Options{Store: v})
	ctx := t.Context()
	for _, c := range []struct{ server, principal, want string }{
		{"wiki", "alice", "Bearer at--wiki"},
		{"wiki", "bob", "Bearer at--wiki"},
		{"files", "alice", "Bearer at-alice-files"},
		{"files", "", "Bearer at--files"}, // the local user's own
	} {
		if a, err := m.Authorization(ctx, c.server, c.principal); err != nil || a != c.want {
			t.Errorf("Authorization(%s, %q) = %q, %v; want %q", c.server, c.principal, a, err, c.want)
		}
	}
	var nc *NotConnectedError
	if _, err := m.Authorization(ctx, "files", "bob"); !errors.As(err, &nc) || nc.Principal != "bob" || nc.Reason != "" {
		t.Errorf("bob, who has not connected files: %v", err)
	}
	if _, err := m.Authorization(ctx, "blog", "alice"); !errors.As(err, &nc) || nc.Principal != "" {
		t.Errorf("alice's grant of blog, shared but not connected: %v", err)
	}
	if err := m.Connected(ctx, "docs"); !errors.As(err, &nc) {
		t.Errorf("the gateway's own request to docs, which nobody connected: %v", err)
	}
	for _, c := range []struct {
		server, want string
		ok           bool
	}{{"wiki", "", true}, {"files", "alice", true}, {"docs", "", false}, {"blog", "", true}, {"nope", "", false}} {
		if p, ok := m.Identity(ctx, c.server); p != c.want || ok != c.ok {
			t.Errorf("Identity(%s) = %q, %v; want %q, %v", c.server, p, ok, c.want, c.ok)
		}
	}
	gs, err := m.Grants(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs["files"].Principal != "alice" || gs["wiki"].Principal != "" {
		t.Errorf("alice's grants %+v: want hers of files and the shared one of wiki, not hers of blog", gs)
	}
}

// TestRefresh: a grant about to expire is refreshed once however many
// requests want it at the same moment, keeps its refresh token when the
// authorization server sends none, and one without a refresh token
// lapses; a refresh that fails for now leaves the grant as it was, to be
// tried again.
func TestRefresh(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	refreshes, failing := 0, false
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		refreshes++
		w.Header().Set("Content-Type", "application/json")
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"access_token":"at-new","token_type":"Bearer","expires_in":3600}`))
	}))
	defer tokens.Close()
	v := newVault(t, nil)
	expired := time.Now().Add(30 * time.Second) // within refreshAhead
	for p, rt := range map[string]string{"alice": "rt-alice", "bob": "", "carol": "rt-carol"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: p, Server: "files", TokenURL: tokens.URL, ClientID: "gw",
			AuthStyle: int(oauth2.AuthStyleInParams), Token: oauth2.Token{AccessToken: "at-old", RefreshToken: rt, Expiry: expired}}); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, []Server{{Name: "files", URL: tokens.URL + "/mcp"}}, Options{Store: v})
	ctx := t.Context()

	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			a, err := m.Authorization(ctx, "files", "alice")
			if err != nil {
				a = err.Error()
			}
			got[i] = a
		})
	}
	wg.Wait()
	for _, a := range got {
		if a != "Bearer at-new" {
			t.Errorf("a concurrent Authorization = %q", a)
		}
	}
	mu.Lock()
	if refreshes != 1 {
		t.Errorf("%d refreshes for 8 concurrent requests, want 1", refreshes)
	}
	failing = true
	mu.Unlock()
	if g, err := v.Get(ctx, "alice", "files"); err != nil || g.Token.RefreshToken != "rt-alice" || g.Token.AccessToken != "at-new" {
		t.Errorf("alice's refreshed grant: %+v, %v; want the new access token and the old refresh token", g, err)
	}

	// bob's token still works for 30 s, but cannot be renewed.
	if a, err := m.Authorization(ctx, "files", "bob"); err != nil || a != "Bearer at-old" {
		t.Errorf("bob's token, valid a little longer: %q, %v", a, err)
	}

	var nc *NotConnectedError
	for range 2 {
		if _, err := m.Authorization(ctx, "files", "carol"); err == nil || errors.As(err, &nc) || !strings.Contains(err.Error(), "try again") {
			t.Errorf("a refresh failing for now: %v; want an error to try again", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if refreshes != 3 {
		t.Errorf("%d refreshes; want each of carol's two calls to try", refreshes)
	}
	if g, err := v.Get(ctx, "carol", "files"); err != nil || g.Status != vault.Connected || g.Token.AccessToken != "at-old" {
		t.Errorf("carol's grant after a passing failure: %+v, %v", g, err)
	}
}

// TestExpired: a grant past its expiry without a refresh token asks its
// principal to connect again.
func TestExpired(t *testing.T) {
	t.Parallel()
	v := newVault(t, nil)
	if err := v.Put(t.Context(), &vault.Connection{Principal: "bob", Server: "files", ClientID: "gw",
		Token: oauth2.Token{AccessToken: "at-old", Expiry: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}}, Options{Store: v})
	var nc *NotConnectedError
	if _, err := m.Authorization(t.Context(), "files", "bob"); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "expired") {
		t.Errorf("an expired grant without a refresh token: %v", err)
	}
}

// TestRefreshGuarded: a grant of a public upstream is not refreshed at a
// token endpoint on the gateway's own network.
func TestRefreshGuarded(t *testing.T) {
	t.Parallel()
	hits := 0
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer tokens.Close()
	v := newVault(t, nil)
	if err := v.Put(t.Context(), &vault.Connection{Principal: "alice", Server: "files", TokenURL: tokens.URL, ClientID: "gw",
		Token: oauth2.Token{AccessToken: "at-old", RefreshToken: "rt", Expiry: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, []Server{{Name: "files", URL: "https://93.184.216.34/mcp"}}, Options{Store: v})
	if _, err := m.Authorization(t.Context(), "files", "alice"); err == nil || !strings.Contains(err.Error(), "may not send the gateway there") {
		t.Errorf("refreshing at a loopback token endpoint: %v", err)
	}
	tokens.Close()
	if hits != 0 {
		t.Errorf("the token endpoint on loopback had %d requests", hits)
	}
}

// TestKeep: what a sign-in granted is kept with the scopes the token says
// (else those asked for) and the authorization server it came from; it
// ends a step-up's refusal, wakes those waiting for the server to be
// connected, and makes its principal the one who lists the server only if
// nobody did before.
func TestKeep(t *testing.T) {
	t.Parallel()
	v := newVault(t, nil)
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}, {Name: "wiki", URL: "https://wiki.example/mcp", Shared: true}},
		Options{Store: v})
	ctx := t.Context()
	cfg := &oauth2.Config{ClientID: "gw", Scopes: []string{"files:read", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: "https://as.example/oauth/authorize", TokenURL: "https://as.example/oauth/token"}}
	ready := m.Ready("files")
	if err := m.keep(ctx, m.servers["files"], &flow{principal: "alice", cfg: cfg,
		token: (&oauth2.Token{AccessToken: "at-alice"}).WithExtra(map[string]any{"scope": "files:read files:write"})}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	default:
		t.Error("those waiting for files to be connected were not told")
	}
	if m.Ready("files") == ready {
		t.Error("Ready gives a channel already closed")
	}
	g, err := v.Get(ctx, "alice", "files")
	if err != nil || g.Scopes != "files:read files:write" || g.Issuer != "https://as.example" || g.TokenURL != cfg.Endpoint.TokenURL || g.ClientID != "gw" {
		t.Fatalf("alice's grant: %+v, %v", g, err)
	}

	m.Refused(ctx, "files", "bob", &http.Response{StatusCode: http.StatusForbidden,
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="files:write"`}}})
	if err := m.keep(ctx, m.servers["files"], &flow{principal: "bob", cfg: cfg, token: &oauth2.Token{AccessToken: "at-bob"}}); err != nil {
		t.Fatal(err)
	}
	if a, err := m.Authorization(ctx, "files", "bob"); err != nil || a != "Bearer at-bob" {
		t.Errorf("bob, connected again after a step-up refusal: %q, %v", a, err)
	}
	if g, err := v.Get(ctx, "bob", "files"); err != nil || g.Scopes != "files:read offline_access" {
		t.Errorf("bob's grant, whose token names no scopes: %+v, %v; want those asked for", g, err)
	}
	if p, ok := m.Identity(ctx, "files"); !ok || p != "alice" {
		t.Errorf("Identity(files) = %q, %v; want alice, who connected first", p, ok)
	}
	if err := m.keep(ctx, m.servers["wiki"], &flow{principal: "", cfg: cfg, token: &oauth2.Token{AccessToken: "at-wiki"}}); err != nil {
		t.Fatal(err)
	}
	if a, err := m.Authorization(ctx, "wiki", "bob"); err != nil || a != "Bearer at-wiki" {
		t.Errorf("bob's request to wiki: %q, %v; want the shared grant", a, err)
	}
	if err := m.keep(ctx, m.servers["files"], &flow{principal: "carol", cfg: cfg}); err == nil {
		t.Error("a sign-in that granted no token was kept")
	}
}

// TestDisconnect: a disconnected grant is no longer used, here at once,
// nor lists the server; disconnecting twice is no error, an unknown
// server is.
func TestDisconnect(t *testing.T) {
	t.Parallel()
	v := newVault(t, nil)
	for _, p := range []string{"alice", "bob"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: p, Server: "files", ClientID: "gw", Token: oauth2.Token{AccessToken: "at-" + p}}); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}}, Options{Store: v})
	ctx := t.Context()
	if p, ok := m.Identity(ctx, "files"); !ok || p != "alice" {
		t.Fatalf("Identity = %q, %v", p, ok)
	}
	if err := m.Connected(WithPrincipal(ctx, "alice"), "files"); err != nil { // cached
		t.Fatal(err)
	}
	for range 2 {
		if err := m.Disconnect(ctx, "alice", "files"); err != nil {
			t.Fatal(err)
		}
	}
	var nc *NotConnectedError
	if err := m.Connected(WithPrincipal(ctx, "alice"), "files"); !errors.As(err, &nc) {
		t.Errorf("alice after disconnecting: %v", err)
	}
	if p, ok := m.Identity(ctx, "files"); !ok || p != "bob" {
		t.Errorf("Identity after alice disconnected = %q, %v; want bob", p, ok)
	}
	if err := m.Disconnect(ctx, "alice", "nope"); err == nil {
		t.Error("disconnecting an unknown server")
	}
}

// TestIdentityMovesOn: when the grant that lists a server no longer
// serves (its refresh was refused, or it was disconnected on another
// replica), the gateway's own requests carry the next connected
// principal's.
func TestIdentityMovesOn(t *testing.T) {
	t.Parallel()
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant"}`))
	}))
	defer tokens.Close()
	now := time.Now().Add(-time.Hour)
	v := newVault(t, &vault.Options{Now: func() time.Time { return now }}) // the test's goroutine only
	for _, c := range []struct {
		principal, server string
		expiry            time.Time
	}{{"alice", "files", now}, {"bob", "files", time.Time{}}, {"carol", "wiki", time.Time{}}, {"dave", "wiki", time.Time{}}} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: c.principal, Server: c.server, ClientID: "gw", TokenURL: tokens.URL,
			AuthStyle: int(oauth2.AuthStyleInParams), Token: oauth2.Token{AccessToken: "at-" + c.principal, RefreshToken: "rt", Expiry: c.expiry}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second) // created in this order
	}
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}, {Name: "wiki", URL: "https://wiki.example/mcp"}},
		Options{Store: v, HTTPClient: tokens.Client()})
	ctx := t.Context() // the gateway's own requests: no principal
	for _, c := range []struct {
		server, first, then string
		gone                func()
	}{
		{"files", "alice", "bob", func() {}}, // alice's token is refreshed, and refused
		{"wiki", "carol", "dave", func() {
			if err := v.Delete(ctx, "carol", "wiki"); err != nil { // as another replica would
				t.Fatal(err)
			}
		}},
	} {
		if p, ok := m.Identity(ctx, c.server); !ok || p != c.first {
			t.Fatalf("Identity(%s) = %q, %v; want %s", c.server, p, ok, c.first)
		}
		c.gone()
		var nc *NotConnectedError
		if err := m.Connected(ctx, c.server); !errors.As(err, &nc) {
			t.Fatalf("the gateway's own request to %s with %s's grant: %v", c.server, c.first, err)
		}
		if p, ok := m.Identity(ctx, c.server); !ok || p != c.then {
			t.Errorf("Identity(%s) once %s's grant no longer serves = %q, %v; want %s", c.server, c.first, p, ok, c.then)
		}
		if err := m.Connected(ctx, c.server); err != nil {
			t.Errorf("the gateway's own request to %s: %v", c.server, err)
		}
	}
}
