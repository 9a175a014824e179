package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/internal/storetest"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
)

func open(t *testing.T, spec string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reopen closes s and opens spec again, as a restarted process does.
func reopen(spec string) func(t *testing.T, s pin.Store) pin.Store {
	return func(t *testing.T, s pin.Store) pin.Store {
		if err := s.(*sqlstore.Store).Close(); err != nil {
			t.Fatal(err)
		}
		return open(t, spec)
	}
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	var spec string
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) pin.Store {
			spec = "sqlite:" + filepath.Join(t.TempDir(), "pins.db")
			return open(t, spec)
		},
		Reopen: func(t *testing.T, s pin.Store) pin.Store { return reopen(spec)(t, s) },
	})
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ spec, want string }{
		{"pins.db", "want sqlite:PATH or postgres://"},
		{"sqlite:", "write sqlite:PATH, a file path"},
		{"sqlite:" + filepath.Join(t.TempDir(), "missing", "dir", "pins.db"), "sqlite"},
		{"postgres://user:hunter2@[::1", "not a PostgreSQL URL"},
	} {
		s, err := sqlstore.Open(ctx, tc.spec)
		if err == nil {
			s.Close()
			t.Errorf("%q: opened", tc.spec)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want %q (and no password)", tc.spec, err, tc.want)
		}
	}
}

func tool(description string, destructive bool) *mcp.Tool {
	return &mcp.Tool{
		Name:        "delete_file",
		Description: description,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}
}

// TestPinnerSurvivesRestart checks that a quarantine outlives the
// gateway: a new Pinner over the reopened file refuses the call before it
// lists anything, and the approval the CLI would give through a second
// handle on the same file releases it.
func TestPinnerSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "pins.db")
	s := open(t, spec)
	p := pin.New(s, nil)
	if _, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", true)}); err != nil {
		t.Fatal(err)
	}
	vs, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false)})
	if err != nil || vs[0].State != pin.StateQuarantined {
		t.Fatalf("%v %+v", err, vs)
	}
	s.Close()

	s = open(t, spec)
	p = pin.New(s, nil)
	if err := p.Allowed(ctx, "files", "delete_file"); !errors.Is(err, pin.ErrQuarantined) {
		t.Fatalf("after the restart: %v", err)
	}
	if v, err := p.Check(ctx, "files", []*mcp.Tool{tool("Delete a file.", false)}); err != nil || v[0].Event != pin.EventNone || v[0].State != pin.StateQuarantined {
		t.Errorf("listed after the restart: %v %+v", err, v)
	}

	// Another process (the preflight pins command) approves.
	cli := open(t, spec)
	if _, err := cli.Approve(ctx, "files", "delete_file", vs[0].Fingerprint, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	clk := time.Now().Add(pin.DefaultRefresh)
	p2 := pin.New(s, &pin.Options{Now: func() time.Time { return clk }})
	if err := p2.Allowed(ctx, "files", "delete_file"); err != nil {
		t.Errorf("after the approval: %v", err)
	}
}

// openB opens a store for a benchmark, closed when it ends.
func openB(b *testing.B, spec string) (*sqlstore.Store, error) {
	s, err := sqlstore.Open(context.Background(), spec)
	if err == nil {
		b.Cleanup(func() { s.Close() })
	}
	return s, err
}

// TestUpgrade: a database whose tables were created unversioned is
// adopted in place: its version is recorded, its pins and first listings
// read back and go on (the quarantined tool is approved), and opening
// again changes nothing.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pins.db")
	b, err := os.ReadFile("testdata/legacy.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	specs := map[string]string{"sqlite": "sqlite:" + path}
	maps.Copy(specs, postgresSpecs(t, "testdata/legacy-postgres.sql"))
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for i := range 2 {
				s := open(t, spec)
				rs, err := s.List(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rs {
					line := fmt.Sprintf("%s/%s %s %q at %s", r.Server, r.Tool, r.State, r.Pinned.Description, r.PinnedAt.Format(time.TimeOnly))
					if r.Pending != nil {
						line += fmt.Sprintf(" pending %q since %s", r.Pending.Description, r.PendingSince.Format(time.TimeOnly))
					}
					got = append(got, line)
				}
				want := []string{
					`files/delete_file quarantined "Deletes a file." at 10:00:00 pending "Deletes a file, and its parent." since 10:01:00`,
					`files/read_file pinned "Reads a file." at 10:00:00`,
				}
				if i == 1 {
					want[0] = `files/delete_file pinned "Deletes a file, and its parent." at 10:02:00`
				}
				if !slices.Equal(got, want) {
					t.Errorf("open %d: the pins:\n%s\nwant\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if first, err := s.Listed(ctx, "files", t0.Add(time.Hour)); err != nil || first {
					t.Errorf("Listed(files) = %v, %v: its first listing was before the upgrade", first, err)
				}
				if i == 0 {
					if _, err := s.Approve(ctx, "files", "delete_file", rs[0].Pending.Fingerprint(), "carol", t0.Add(2*time.Minute)); err != nil {
						t.Errorf("approving the change seen before the upgrade: %v", err)
					}
				}
				s.Close()
			}
			db, err := sqldb.Open(ctx, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n, max int
			if err := db.Read.QueryRowContext(ctx, "SELECT count(*), max(version_id) FROM goose_pins").Scan(&n, &max); err != nil || n != 2 || max != 1 {
				t.Errorf("goose_pins holds %d versions up to %d (%v), want 0 and 1", n, max, err)
			}
		})
	}
}
