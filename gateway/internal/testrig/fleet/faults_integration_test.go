//go:build integration

package fleet_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
)

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// ask starts a confirmed delete of path through HAProxy and returns the
// answer that confirms it.
func ask(t *testing.T, c *fleet.Client, path string) map[string]any {
	t.Helper()
	r := call(t, c, "tools/call", manage("delete", path))
	if r.Error != nil || r.Result["resultType"] != "input_required" {
		t.Fatalf("delete %s was not asked: %s", path, r.Raw)
	}
	return with(manage("delete", path), "inputResponses", accept, "requestState", r.Result["requestState"])
}

// stores waits until replica rep's health report says of each store in
// want (what it keeps: where) whether it answers, and returns the report.
func stores(t *testing.T, rep *fleet.Replica, up bool, want map[string]string) gateway.Health {
	t.Helper()
	var h gateway.Health
	var err error
	// The report pings the stores at most every 5 s.
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		h, err = rep.Health(ctx)
		cancel()
		matched := 0
		for _, s := range h.Stores {
			if at, ok := want[s.Keeps]; ok && s.At == at && s.Up == up && (up == (s.Error == "")) {
				matched++
			}
		}
		if err == nil && matched == len(want) {
			return h
		}
	}
	t.Fatalf("%s: want stores %v up=%v; health %+v, %v", rep.Name, want, up, h, err)
	return h
}

// TestStoresAway stops the fleet's shared stores under it: confirmations
// fail closed while Redis is away, and /healthz says so; no nonce is
// accepted twice across its restart; destructive calls fail closed while
// PostgreSQL is away, reads go on (audit.onUnavailable: proceed), and the
// audit records nothing as done that was not done.
func TestStoresAway(t *testing.T) {
	f := fleet.Start(t, nil)
	files := filepath.Join(f.Dir, "data", "files")
	c := &fleet.Client{URL: f.URL, Version: fleet.Modern}
	pg, err := url.Parse(f.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	redisAt, pgAt := "redis at "+f.Redis.Addr(), "postgres at "+pg.Host
	shared := map[string]string{"state": redisAt, "disclosure": redisAt, "page sessions": redisAt,
		"approvals": pgAt, "audit": pgAt, "pins": pgAt}

	t.Run("Redis restarted", func(t *testing.T) {
		mkdirs(t, files, "used.txt", "pending.txt", "asked-while-away.txt", "after.txt", "legacy-while-away.txt")
		for _, rep := range f.Replicas {
			if h := stores(t, rep, true, shared); h.Status != "ok" {
				t.Errorf("%s: status %q with every store up", rep.Name, h.Status)
			}
		}
		used := ask(t, c, "used.txt")
		if r := call(t, c, "tools/call", used); r.Error != nil || !strings.Contains(r.Text(), "deleted: used.txt") {
			t.Fatalf("the first answer: %s", r.Raw)
		}
		pending := ask(t, c, "pending.txt")

		f.Redis.Stop(t)
		for _, rep := range f.Replicas { // each replica, directly
			d := &fleet.Client{URL: rep.URL, Version: fleet.Modern}
			r := call(t, d, "tools/call", manage("delete", "asked-while-away.txt"))
			if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "cannot record it") {
				t.Errorf("%s asked a confirmation with Redis away: %s", rep.Name, r.Raw)
			}
			r = call(t, d, "tools/call", pending)
			if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "cannot record it") {
				t.Errorf("%s took an answer with Redis away: %s", rep.Name, r.Raw)
			}
			// Reads need no nonce.
			if r := call(t, d, "tools/call", manage("read", "notes.txt")); r.Error != nil || !strings.Contains(r.Text(), "shared notes") {
				t.Errorf("%s: a read with Redis away: %s", rep.Name, r.Raw)
			}
		}
		if !exists(t, filepath.Join(files, "pending.txt")) || !exists(t, filepath.Join(files, "asked-while-away.txt")) {
			t.Fatal("a delete ran with Redis away")
		}
		for _, rep := range f.Replicas {
			h := stores(t, rep, false, map[string]string{"state": redisAt, "disclosure": redisAt, "page sessions": redisAt})
			for _, s := range h.Stores {
				if s.Keeps == "state" && !strings.Contains(s.FailsClosed, "single-use confirmations") {
					t.Errorf("%s: the state store's error does not say confirmations fail closed: %+v", rep.Name, s)
				}
			}
			if h.Status != "degraded" {
				t.Errorf("%s: status %q with Redis away", rep.Name, h.Status)
			}
		}
		// A 2025-11-25 client is asked within its call, on its session:
		// the answer is to that question alone, and needs no shared state.
		legacy := &fleet.Client{URL: f.Replicas[0].URL, Version: fleet.Legacy,
			OnRequest: func(method string, _ json.RawMessage) any {
				if method != "elicitation/create" {
					return nil
				}
				return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
			}}
		if r := call(t, legacy, "tools/call", manage("delete", "legacy-while-away.txt")); r.Error != nil || !strings.Contains(r.Text(), "deleted: legacy-while-away.txt") {
			t.Errorf("a 2025-11-25 confirmation within the call, with Redis away: %s", r.Raw)
		}
		legacy.Close(context.Background())

		f.Redis.Restart(t) // empty: it kept nothing
		for _, rep := range f.Replicas {
			stores(t, rep, true, shared)
		}
		mkdirs(t, files, "used.txt")
		for _, rep := range f.Replicas {
			d := &fleet.Client{URL: rep.URL, Version: fleet.Modern}
			for name, answer := range map[string]map[string]any{"used": used, "pending": pending} {
				// Until the replica's Redis client dials again (it retries
				// each second once dials failed), the answer fails closed
				// as unavailable; then it is refused as stale.
				r := call(t, d, "tools/call", answer)
				for deadline := time.Now().Add(30 * time.Second); r.Error != nil && r.Error.Code == -32603 &&
					strings.Contains(r.Error.Message, "unavailable") && time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
					r = call(t, d, "tools/call", answer)
				}
				if r.Error == nil || r.Error.Code != -32602 {
					t.Errorf("%s took the %s answer from before the restart: %s", rep.Name, name, r.Raw)
				}
			}
		}
		if !exists(t, filepath.Join(files, "used.txt")) || !exists(t, filepath.Join(files, "pending.txt")) {
			t.Fatal("an answer from before Redis restarted deleted a file")
		}
		// Recovered: a new confirmation is asked and taken.
		after := ask(t, c, "after.txt")
		if r := call(t, c, "tools/call", after); r.Error != nil || !strings.Contains(r.Text(), "deleted: after.txt") {
			t.Fatalf("a confirmation after the restart: %s", r.Raw)
		}
		if r := call(t, c, "tools/call", after); r.Error == nil {
			t.Errorf("the answer after the restart, replayed: %s", r.Raw)
		}
	})

	t.Run("PostgreSQL stopped", func(t *testing.T) {
		mkdirs(t, files, "kept.txt")
		answers := map[string]map[string]any{}
		for _, rep := range f.Replicas {
			answers[rep.Name] = ask(t, &fleet.Client{URL: rep.URL, Version: fleet.Modern}, "kept.txt")
		}
		f.Postgres.Stop(t)
		for _, rep := range f.Replicas {
			d := &fleet.Client{URL: rep.URL, Version: fleet.Modern}
			r := call(t, d, "tools/call", answers[rep.Name])
			if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "audit log is unavailable") {
				t.Errorf("%s, a confirmed delete with PostgreSQL away: %s", rep.Name, r.Raw)
			}
			content := "written while away by " + rep.Name
			r = call(t, d, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "append", "path": "kept.txt", "content": content}})
			if r.Error == nil && r.Result["isError"] != true {
				t.Errorf("%s ran an append (approved by a person) with PostgreSQL away: %s", rep.Name, r.Raw)
			}
			l := &fleet.Client{URL: rep.URL, Version: fleet.Legacy}
			for _, cl := range []*fleet.Client{d, l} {
				if r := call(t, cl, "tools/call", manage("read", "notes.txt")); r.Error != nil || !strings.Contains(r.Text(), "shared notes") {
					t.Errorf("%s: a %s read with PostgreSQL away (onUnavailable: proceed): %s", rep.Name, cl.Version, r.Raw)
				}
			}
			l.Close(context.Background())
		}
		if got, err := os.ReadFile(filepath.Join(files, "kept.txt")); err != nil || string(got) != "x" {
			t.Fatalf("kept.txt after calls with PostgreSQL away: %q, %v", got, err)
		}
		f.Postgres.Restart(t)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		recs, err := f.Audit(ctx, audit.Filter{Server: "files", Tool: "manage_files"})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			var a struct{ Path, Action string }
			json.Unmarshal(rec.Args, &a)
			if a.Path == "kept.txt" && rec.Outcome == audit.OutcomeOK {
				t.Errorf("the audit records a %s of kept.txt as done: %+v", a.Action, rec)
			}
		}
	})
}
