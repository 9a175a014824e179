//go:build integration

package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestPostgres(t *testing.T) {
	t.Parallel()
	var spec string
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) pin.Store {
			spec = pgtest.NewDatabase(t)
			return open(t, spec)
		},
		Reopen: func(t *testing.T, s pin.Store) pin.Store { return reopen(spec)(t, s) },
	})
}

// TestReplicasShareAPostgres checks two Pinners on two connection pools
// to one database, as two gateway replicas: one quarantines, the other
// refuses and approves, and the first releases.
func TestReplicasShareAPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func() { mu.Lock(); now = now.Add(pin.DefaultRefresh); mu.Unlock() }
	a := pin.New(open(t, url), &pin.Options{Now: clock})
	b := pin.New(open(t, url), &pin.Options{Now: clock})
	if _, err := a.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", true)}); err != nil {
		t.Fatal(err)
	}
	if vs, err := b.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", true)}); err != nil || vs[0].Event != pin.EventNone {
		t.Fatalf("b: %v %+v", err, vs)
	}
	vs, err := a.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false)})
	if err != nil || vs[0].State != pin.StateQuarantined {
		t.Fatal(err, vs)
	}
	advance()
	if err := b.Allowed(ctx, "files", "delete_file"); !errors.Is(err, pin.ErrQuarantined) {
		t.Fatalf("b: %v", err)
	}
	if _, err := b.Approve(ctx, "files", "delete_file", vs[0].Fingerprint, "alice"); err != nil {
		t.Fatal(err)
	}
	advance()
	if err := a.Allowed(ctx, "files", "delete_file"); err != nil {
		t.Errorf("a after b approved: %v", err)
	}
	recs, err := a.Records(ctx, "")
	if err != nil || len(recs) != 1 || recs[0].ApprovedBy != "alice" || recs[0].Pinned.Fingerprint() != vs[0].Fingerprint {
		t.Errorf("records %v %+v", err, recs)
	}
}

// TestPostgresUnavailable stops PostgreSQL under a Pinner: calls are
// answered from what was read last (a quarantined tool stays refused), a
// tool nothing is known of is refused, a list cannot be checked and an
// approval fails; once PostgreSQL is back, everything works again.
func TestPostgresUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := pgtest.Start(t)
	url := srv.DSN()
	var mu sync.Mutex
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func() { mu.Lock(); now = now.Add(pin.DefaultRefresh); mu.Unlock() }
	p := pin.New(open(t, url), &pin.Options{Now: clock})
	read := &mcp.Tool{Name: "read_file", InputSchema: map[string]any{"type": "object"}}
	if _, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", true), read}); err != nil {
		t.Fatal(err)
	}
	vs, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false), read})
	if err != nil || vs[0].State != pin.StateQuarantined {
		t.Fatal(err, vs)
	}

	srv.Stop(t)
	advance() // what was read is stale: the store is asked, and fails
	if err := p.Allowed(ctx, "files", "delete_file"); !errors.Is(err, pin.ErrQuarantined) {
		t.Errorf("quarantined tool while the store is down: %v", err)
	}
	if err := p.Allowed(ctx, "files", "read_file"); err != nil {
		t.Errorf("pinned tool while the store is down: %v", err)
	}
	if err := p.Allowed(ctx, "other", "tool"); err == nil || errors.Is(err, pin.ErrQuarantined) || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("unknown tool while the store is down: %v", err)
	}
	if _, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false), read}); err == nil {
		t.Error("a list was checked without the store")
	}
	if _, err := p.Approve(ctx, "files", "delete_file", vs[0].Fingerprint, "alice"); err == nil {
		t.Error("approved without the store")
	}

	srv.Restart(t)
	if _, err := p.Approve(ctx, "files", "delete_file", vs[0].Fingerprint, "alice"); err != nil {
		t.Fatalf("approving after the restart: %v", err)
	}
	if err := p.Allowed(ctx, "files", "delete_file"); err != nil {
		t.Errorf("after the approval: %v", err)
	}
	if v, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false), read}); err != nil || v[0].State != pin.StatePinned {
		t.Errorf("listed after the restart: %v %+v", err, v)
	}
}
