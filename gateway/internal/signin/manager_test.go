package signin

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
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
	key, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Hour)        // the connections were made an hour ago
	clock := func() time.Time { return now } // the test's goroutine only
	v, err := vault.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "vault.db"), []vault.Key{key}, &vault.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, p := range []string{"alice", "bob", "carol"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: p, Server: "files", ClientID: "preflight",
			Token: oauth2.Token{AccessToken: "at-" + p, Expiry: time.Now().Add(2 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second) // created in this order
	}
	newManager := func() *Manager {
		m, err := New([]Server{{Name: "files", URL: "http://127.0.0.1:1/mcp"}}, Options{Store: v, CallbackURL: func() string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m := newManager()
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
	if p, ok := newManager().Identity(ctx, "files"); !ok || p != "bob" {
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
