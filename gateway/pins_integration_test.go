//go:build integration

package gateway_test

import (
	"context"
	"os"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestPinPostgres: replicas sharing a PostgreSQL store: one quarantines
// the changed tool, another started later holds it too, and an approval
// through the store releases it in both.
func TestPinPostgres(t *testing.T) {
	var dsn string
	if os.Getenv(pgtest.EnvDSN) != "" {
		dsn = pgtest.NewDatabase(t)
	} else {
		dsn = pgtest.Start(t).DSN()
	}
	open := func() *sqlstore.Store {
		s, err := sqlstore.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	up := newRugServer(t)
	_, url := pinnedGateway(t, up.url, open(), pin.ModeStrict)
	w := watch(t, url)
	up.setDelete("Delete a file.", false)
	w.next(t, "delete_file stopped being destructive")
	q := quarantine(listedTool(t, url, "delete_file"))
	if q == nil {
		t.Fatal("not quarantined")
	}
	_, url2 := pinnedGateway(t, up.url, open(), pin.ModeStrict)
	w2 := watch(t, url2)
	if q2 := quarantine(listedTool(t, url2, "delete_file")); q2 == nil || q2["pending"] != q["pending"] {
		t.Fatalf("the second replica: %v", q2)
	}
	approvePin(t, dsn, "bob", "files", "delete_file", q["pending"].(string))
	w.next(t, "the approval")
	w2.next(t, "the approval (second replica)")
	for _, u := range []string{url, url2} {
		if _, isErr := callTool(t, u, "delete_file"); isErr[0] || isErr[1] {
			t.Errorf("%s: refused after the approval", u)
		}
	}
}

// TestPinStoreDown: while the pin store cannot be read, an upstream whose
// tools changed is not served at all (its changed tool cannot be checked);
// when the store is back, the next check serves it again, the changed
// tool quarantined, without a restart of the gateway.
func TestPinStoreDown(t *testing.T) {
	pg := pgtest.Start(t)
	store, err := sqlstore.Open(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	up := newRugServer(t)
	_, url := pinnedGateway(t, up.url, store, pin.ModeStrict)
	w := watch(t, url)

	pg.Stop(t)
	up.setDelete("Delete a file.", false)
	w.next(t, "delete_file changed while the store is down")
	r := wiretest.Stateless(url, nil).Call(t, "tools/list", nil)
	if tools := r.Result["tools"].([]any); len(tools) != 0 {
		t.Errorf("the server's tools are served unchecked: %s", r.Raw)
	}
	r = wiretest.Stateless(url, nil).Call(t, "tools/call", map[string]any{"name": "read_file", "arguments": map[string]any{}})
	if r.Error == nil {
		t.Errorf("read_file was called while its server's tools are not served: %s", r.Raw)
	}

	pg.Restart(t)
	w.next(t, "the store came back")
	if q := quarantine(listedTool(t, url, "delete_file")); q == nil {
		t.Errorf("delete_file is not quarantined once the store is back")
	}
	if texts, isErr := callTool(t, url, "read_file"); isErr[0] || isErr[1] || texts[0] != "contents" {
		t.Errorf("read_file once the store is back: %q %v", texts, isErr)
	}
	if n := up.deletes.Load(); n != 0 {
		t.Errorf("the upstream ran delete_file %d times", n)
	}
}
