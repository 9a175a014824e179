//go:build integration

package gateway_test

import (
	"os"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/oauthas"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// TestSignInReplicasShareTheVault: two gateways on one PostgreSQL vault
// with the same key. Alice connects on replica A; replica B lists the
// upstream and her call there carries her identity. A refresh due on both
// at once happens once.
func TestSignInReplicasShareTheVault(t *testing.T) {
	var dsn string
	if os.Getenv(pgtest.EnvDSN) != "" {
		dsn = pgtest.NewDatabase(t)
	} else {
		dsn = pgtest.Start(t).DSN()
	}
	k, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	r := newOAuthRig(t, "alice")
	r.as.SetAccessTTL(30*time.Second, 30*time.Second) // every token due: the listing refreshes
	a := startOAuthGateway(t, r, openVaultAt(t, dsn, k), oauthas.ConfidentialClient)
	b := startOAuthGateway(t, r, openVaultAt(t, dsn, k), oauthas.ConfidentialClient)
	alice := r.person(t, "alice")

	alice.signIn(t, a)
	alice.connect(t, a.base+"/ui/connections/whoami/connect")
	a.waitListed(t, alice)
	b.waitListed(t, alice)

	r.as.SetAccessTTL(30*time.Second, time.Hour)
	before := r.as.Refreshes("alice")
	const n = 4
	for _, s := range alice.whoamiTogether(t.Context(), n, a, b) {
		if s != "alice" {
			t.Errorf("a call on a replica ran as %q", s)
		}
	}
	if got := r.as.Refreshes("alice") - before; got != 1 {
		t.Errorf("%d refreshes for calls on two replicas, want 1", got)
	}
	alice.mustBe(t, b, "alice")
}
