package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/requeststate"
)

func randomSecret(t *testing.T) string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func optionsFrom(t *testing.T, yaml string, env map[string]string) *gateway.Options {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "gateway.yaml"), []byte(yaml), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opts.Close() })
	return opts
}

// TestRingFromConfig: two replicas mapped from the same requestState keys
// open each other's sealed state, and after a rotation ([new, old]) the
// new ring opens what the old one sealed and seals with the new key.
// Without the section each process has a ring of its own (nil: random).
func TestRingFromConfig(t *testing.T) {
	old, neu := "k1:"+randomSecret(t), "k2:"+randomSecret(t)
	yaml := "servers: {s: {command: x}}\nrequestState: {keysEnv: KEYS}\n"
	one := optionsFrom(t, yaml, map[string]string{"KEYS": old})
	two := optionsFrom(t, yaml, map[string]string{"KEYS": old})
	rotated := optionsFrom(t, yaml, map[string]string{"KEYS": neu + "," + old})
	b := requeststate.Binding{Method: requeststate.MethodCallTool, Target: "delete_folder", Audience: "preflight"}
	tok, err := one.Ring.Seal(b, []byte("state"))
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*requeststate.Ring{"another replica": two.Ring, "a rotated replica": rotated.Ring} {
		if got, err := r.Open(tok, b); err != nil || string(got) != "state" {
			t.Errorf("%s: Open = %q, %v", name, got, err)
		}
	}
	if ids := rotated.Ring.KeyIDs(); len(ids) != 2 || ids[0] != "k2" {
		t.Errorf("rotated ring's keys %v, want k2 sealing", ids)
	}
	if s := rotated.Ring.String(); strings.Contains(s, strings.TrimPrefix(old, "k1:")[:12]) {
		t.Errorf("the ring prints a secret: %s", s)
	}
	if opts := optionsFrom(t, "servers: {s: {command: x}}\n", nil); opts.Ring != nil {
		t.Error("a ring without requestState")
	}
	// Parse does not read files: the mapping says so rather than use a random key.
	cfg, err := config.Parse("g.yaml", []byte("servers: {s: {command: x}}\nrequestState: {keysFile: keys}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Options(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "requestState.keysFile: the keys were not read") {
		t.Errorf("keys file not read: %v", err)
	}
}

// TestApprovalsFromConfig: an approvals section becomes Options.Approvals
// on its store; the SQLite file outlives the gateway (an approval given
// before a restart is used after it), and Gateway.Close closes the store.
func TestApprovalsFromConfig(t *testing.T) {
	if opts := optionsFrom(t, "servers: {s: {command: x}}\n", nil); opts.Approvals != nil {
		t.Error("approvals without the section")
	}
	db := filepath.Join(t.TempDir(), "approvals.db")
	yaml := "servers: {s: {command: x}}\napprovals: {store: sqlite, path: " + db + ", admins: [root]}\n"
	ctx := context.Background()
	call := approval.Call{Principal: "alice", Server: "files", Tool: "manage_files", Arguments: json.RawMessage(`{"path":"/a"}`)}

	opts := optionsFrom(t, yaml, nil)
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := opts.Approvals.Ask(ctx, call)
	if err != nil || r.State != approval.Pending {
		t.Fatalf("Ask = %+v, %v", r, err)
	}
	if _, err := opts.Approvals.Approve(ctx, r.ID, approval.Approver{Principal: "root"}); err != nil {
		t.Fatalf("an admin's approval: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := opts.Approvals.Get(ctx, r.ID, "alice"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("the store after Close: %v, want it closed", err)
	}

	opts = optionsFrom(t, yaml, nil) // a restart
	used, err := opts.Approvals.Ask(ctx, call)
	if err != nil || used.State != approval.Used || used.ID != r.ID {
		t.Errorf("after a restart the approval was %+v, %v; want used now", used, err)
	}
	if g, err = gateway.New(opts); err != nil {
		t.Fatal(err)
	}
	g.Close()

	cfg, err := config.Parse("g.yaml", []byte("servers: {s: {command: x}}\napprovals: {store: postgres, url: 'postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5'}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = setup.Options(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "configuration: approvals.store: approval store: postgres at 127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unreachable PostgreSQL: %v", err)
	}
}
