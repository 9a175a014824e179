//go:build integration

package fleet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
)

func TestMain(m *testing.M) { fleet.Main(m) }

// bound is how long a test waits for what must happen; a limit, never a
// synchronization.
const bound = 2 * time.Minute

func call(t *testing.T, c *fleet.Client, method string, params map[string]any) *fleet.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	r, err := c.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// answers adds to responses an accepting answer to each of r's input
// requests: the gateway's confirmation, the example servers' own
// confirmations and the new name they ask for.
func answers(responses map[string]any, r *fleet.Response) map[string]any {
	out := map[string]any{}
	for k, v := range responses {
		out[k] = v
	}
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	for key := range reqs {
		content := map[string]any{"name": "renamed"}
		switch {
		case key == "preflight/confirm":
			content = map[string]any{"confirm": true}
		case strings.Contains(key, "confirm"):
			content = map[string]any{"delete": true, "rename": true}
		}
		out[key] = map[string]any{"action": "accept", "content": content}
	}
	return out
}

func mkdirs(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFleet runs two preflight serve processes behind HAProxy on one
// Redis and one PostgreSQL and checks, on the wire, what a fleet relies on.
func TestFleet(t *testing.T) {
	f := fleet.Start(t, nil)
	folders := filepath.Join(f.Dir, "data", "folders")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	t.Run("the replicas are two processes", func(t *testing.T) {
		pids := map[int]string{}
		for _, r := range f.Replicas {
			h, err := r.Health(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if h.Runtime.PID == 0 || h.Runtime.Goroutines == 0 || h.Runtime.HeapLive == 0 || h.Status != "ok" {
				t.Errorf("%s health: %+v", r.Name, h)
			}
			pids[h.Runtime.PID] = r.Name
		}
		if len(pids) != 2 {
			t.Errorf("replicas by pid: %v, want two processes", pids)
		}
	})

	t.Run("disclosure grants reach a replica started later", func(t *testing.T) {
		c := &fleet.Client{URL: f.URL, Version: fleet.Modern}
		for _, tool := range []string{"folders__delete_folder", "folders__rename_folder"} {
			if r := call(t, c, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"path": "none"}}); !strings.Contains(string(r.Raw), "TOOL_DESCRIPTION_REQUIRED") {
				t.Fatalf("%s before its description was read: %s", tool, r.Raw)
			}
		}
		r := call(t, c, "resources/read", map[string]any{"uri": "resource:///tool_descriptions?tools=folders__delete_folder,folders__rename_folder"})
		if r.Error != nil {
			t.Fatalf("reading the descriptions through HAProxy: %s", r.Raw)
		}
		later := f.AddReplica() // after the grant; not behind HAProxy: reached directly
		direct := &fleet.Client{URL: later.URL, Version: fleet.Modern}
		r = call(t, direct, "tools/call", map[string]any{"name": "folders__delete_folder", "arguments": map[string]any{"path": "none"}})
		if strings.Contains(string(r.Raw), "TOOL_DESCRIPTION_REQUIRED") {
			t.Errorf("the replica started later does not see the grant: %s", r.Raw)
		}
	})

	t.Run("a modern client's rounds on different replicas", func(t *testing.T) {
		mkdirs(t, folders, "full/a.txt", "full/b.txt", "old/x.txt")
		c := &fleet.Client{URL: f.URL, Version: fleet.Modern}
		args := map[string]any{"path": "full"}
		r := call(t, c, "tools/call", map[string]any{"name": "folders__delete_folder", "arguments": args})
		if r.Error != nil || r.Result["resultType"] != "input_required" {
			t.Fatalf("first round: %s", r.Raw)
		}
		asker := r.Replica
		state, _ := r.Result["requestState"].(string)
		answer := answers(nil, r)
		// The answer to the other replica, directly.
		var other *fleet.Replica
		for _, rep := range f.Replicas {
			if rep.Name != asker {
				other = rep
			}
		}
		if other == nil || asker == "" {
			t.Fatalf("asked by %q: want one of %d replicas named", asker, len(f.Replicas))
		}
		// Tampered state is refused there.
		tampered := []byte(state)
		tampered[len(tampered)/2] ^= 1
		direct := &fleet.Client{URL: other.URL, Version: fleet.Modern}
		if r := call(t, direct, "tools/call", map[string]any{"name": "folders__delete_folder", "arguments": args, "inputResponses": answer, "requestState": string(tampered)}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("tampered state on %s: %s", other.Name, r.Raw)
		}
		// The rounds (the gateway's confirmation, then the server's own)
		// answered to the other replica.
		for round := 0; r.Result["resultType"] == "input_required"; round++ {
			if round == 4 {
				t.Fatalf("still asking after %d rounds: %s", round, r.Raw)
			}
			answer = answers(answer, r)
			r = call(t, direct, "tools/call", map[string]any{"name": "folders__delete_folder", "arguments": args, "inputResponses": answer, "requestState": r.Result["requestState"]})
			if r.Error != nil {
				t.Fatalf("round %d on %s of %s's question: %s", round, other.Name, asker, r.Raw)
			}
		}
		if r.Result["resultType"] != "complete" || !strings.Contains(r.Text(), "deleted: full") {
			t.Fatalf("the answers on %s to %s's question: %s", other.Name, asker, r.Raw)
		}
		if _, err := os.Stat(filepath.Join(folders, "full")); !os.IsNotExist(err) {
			t.Errorf("full/ still exists: %v", err)
		}

		// A chain of questions through HAProxy: the rounds alternate.
		served := map[string]bool{}
		params := map[string]any{"name": "folders__rename_folder", "arguments": map[string]any{"path": "old"}}
		for round := 0; ; round++ {
			r := call(t, c, "tools/call", params)
			served[r.Replica] = true
			if r.Error != nil {
				t.Fatalf("round %d: %s", round, r.Raw)
			}
			if r.Result["resultType"] != "input_required" {
				if !strings.Contains(r.Text(), "renamed") && !strings.Contains(r.Text(), "old") {
					t.Errorf("rename ended with %s", r.Raw)
				}
				break
			}
			if round == 4 {
				t.Fatalf("still asking after %d rounds: %s", round, r.Raw)
			}
			responses, _ := params["inputResponses"].(map[string]any)
			responses = answers(responses, r)
			params = map[string]any{"name": "folders__rename_folder", "arguments": map[string]any{"path": "old"}, "inputResponses": responses, "requestState": r.Result["requestState"]}
		}
		if _, err := os.Stat(filepath.Join(folders, "renamed", "x.txt")); err != nil {
			t.Errorf("old/ was not renamed: %v", err)
		}
		if len(served) < 2 {
			t.Errorf("the rounds were served by %v, want both replicas", served)
		}
	})

	t.Run("legacy sessions stay on their replica", func(t *testing.T) {
		seen := map[string]bool{}
		for range 2 {
			c := &fleet.Client{URL: f.URL, Version: fleet.Legacy}
			first := call(t, c, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "read", "path": "notes.txt"}})
			if first.Error != nil || !strings.Contains(first.Text(), "shared notes") {
				t.Fatalf("read: %s", first.Raw)
			}
			seen[first.Replica] = true
			for range 4 {
				if r := call(t, c, "tools/list", nil); r.Error != nil || r.Replica != first.Replica {
					t.Errorf("session %s moved from %s to %s (%s)", c.Session(), first.Replica, r.Replica, r.Raw)
				}
			}
			c.Close(ctx)
		}
		if len(seen) != 2 {
			t.Errorf("two sessions started on %v, want both replicas", seen)
		}
	})

	t.Run("a replica killed: the other serves", func(t *testing.T) {
		victim := f.Replicas[0]
		f.Kill(victim)
		c := &fleet.Client{URL: f.URL, Version: fleet.Legacy}
		r := call(t, c, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "read", "path": "notes.txt"}})
		if r.Error != nil || r.Replica == victim.Name {
			t.Errorf("a new legacy session after %s was killed: served by %s: %s", victim.Name, r.Replica, r.Raw)
		}
		c.Close(ctx)
		m := &fleet.Client{URL: f.URL, Version: fleet.Modern}
		for range 4 {
			r := call(t, m, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "read", "path": "notes.txt"}})
			if r.Error != nil || r.Replica != f.Replicas[1].Name {
				t.Errorf("a modern call after %s was killed: served by %s: %s", victim.Name, r.Replica, r.Raw)
			}
		}
	})
}
