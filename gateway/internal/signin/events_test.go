package signin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// TestEvents: the Manager tells Options.OnEvent of a refresh that worked
// and one that failed, a token the upstream refused and a connection
// kept, by server; a grant still valid is no event.
func TestEvents(t *testing.T) {
	t.Parallel()
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.FormValue("refresh_token") != "rt-good" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		w.Write([]byte(`{"access_token":"at-2","token_type":"Bearer","expires_in":3600}`))
	}))
	defer tokens.Close()
	v := newVault(t, nil)
	for p, rt := range map[string]string{"alice": "rt-good", "bob": "rt-bad"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: p, Server: "files", TokenURL: tokens.URL, ClientID: "preflight",
			Token: oauth2.Token{AccessToken: "at-1", RefreshToken: rt, Expiry: time.Now().Add(-time.Minute)}, Status: vault.Connected}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var events []string
	m := newManager(t, []Server{{Name: "files", URL: "http://127.0.0.1:1/mcp"}}, Options{Store: v, HTTPClient: tokens.Client(),
		OnEvent: func(server, event string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, server+" "+event)
		}})
	alice, bob := WithPrincipal(t.Context(), "alice"), WithPrincipal(t.Context(), "bob")
	for range 2 {
		if err := m.Connected(alice, "files"); err != nil {
			t.Fatalf("alice: %v", err)
		}
	}
	var nc *NotConnectedError
	if err := m.Connected(bob, "files"); !errors.As(err, &nc) {
		t.Fatalf("bob, whose refresh fails: %v", err)
	}
	m.Refused(alice, "files", "alice", &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}})
	m.Refused(alice, "files", "alice", &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}}) // not a sign-in matter
	if err := m.keep(bob, m.servers["files"], &flow{principal: "bob", cfg: &oauth2.Config{ClientID: "preflight"},
		token: &oauth2.Token{AccessToken: "at-3"}}); err != nil {
		t.Fatal(err)
	}
	m.Report("files", EventNotConnected)
	want := []string{"files refreshed", "files refresh_failed", "files refused", "files connected", "files not_connected"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}
