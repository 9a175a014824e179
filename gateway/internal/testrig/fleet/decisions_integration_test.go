//go:build integration

package fleet_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
)

// accept answers the gateway's in-band confirmation.
var accept = map[string]any{"preflight/confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}

func manage(action, path string) map[string]any {
	return map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": action, "path": path}}
}

func with(params map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func other(t *testing.T, f *fleet.Fleet, name string) *fleet.Replica {
	t.Helper()
	for _, r := range f.Replicas {
		if r.Name != name && r.Alive() {
			return r
		}
	}
	t.Fatalf("no replica other than %q", name)
	return nil
}

func replica(t *testing.T, f *fleet.Fleet, name string) *fleet.Replica {
	t.Helper()
	for _, r := range f.Replicas {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no replica %q", name)
	return nil
}

// TestDecisions checks the decision stages across replicas: in-band
// confirmations whose single-use nonces live in Redis, out-of-band
// approvals in PostgreSQL with notifications over Redis, and the shared
// audit log.
func TestDecisions(t *testing.T) {
	f := fleet.Start(t, nil)
	files := filepath.Join(f.Dir, "data", "files")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	t.Run("a confirmation asked by one replica runs once on another", func(t *testing.T) {
		path := filepath.Join(files, "doomed.txt")
		mkdirs(t, files, "doomed.txt")
		c := &fleet.Client{URL: f.URL, Version: fleet.Modern}
		r := call(t, c, "tools/call", manage("delete", "doomed.txt"))
		reqs, _ := r.Result["inputRequests"].(map[string]any)
		if r.Error != nil || r.Result["resultType"] != "input_required" || reqs["preflight/confirm"] == nil {
			t.Fatalf("the delete was not asked: %s", r.Raw)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("deleted before it was confirmed: %v", err)
		}
		a := replica(t, f, r.Replica)
		b := other(t, f, a.Name)
		answer := with(manage("delete", "doomed.txt"), "inputResponses", accept, "requestState", r.Result["requestState"])
		r = call(t, &fleet.Client{URL: b.URL, Version: fleet.Modern}, "tools/call", answer)
		if r.Error != nil || r.Result["resultType"] != "complete" || !strings.Contains(r.Text(), "deleted: doomed.txt") {
			t.Fatalf("the answer on %s to %s's confirmation: %s\n%s", b.Name, a.Name, r.Raw, b.Log())
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("doomed.txt still exists: %v", err)
		}
		// The same answer replayed, to either replica, is refused and
		// deletes nothing.
		mkdirs(t, files, "doomed.txt")
		for _, rep := range []*fleet.Replica{a, b} {
			r := call(t, &fleet.Client{URL: rep.URL, Version: fleet.Modern}, "tools/call", answer)
			if r.Error == nil || r.Error.Code != -32602 || r.Result != nil {
				t.Errorf("the answer replayed to %s: %s", rep.Name, r.Raw)
			}
			if !strings.Contains(rep.Log(), `"reason":"already used"`) {
				t.Errorf("%s does not log why it refused the replay:\n%s", rep.Name, rep.Log())
			}
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("a replayed answer deleted the file again: %v", err)
		}
	})

	t.Run("an approval on one replica releases a legacy call waiting on another", func(t *testing.T) {
		mkdirs(t, files, "approved.txt")
		ids := make(chan string, 1)
		b := f.Replicas[1]
		c := &fleet.Client{URL: b.URL, Version: fleet.Legacy,
			Capabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
			OnRequest: func(method string, params json.RawMessage) any {
				var p struct {
					Mode, ElicitationID string
				}
				if method != "elicitation/create" || json.Unmarshal(params, &p) != nil || p.Mode != "url" {
					return nil
				}
				ids <- p.ElicitationID
				return map[string]any{"action": "accept"}
			}}
		defer c.Close(ctx)
		done := make(chan *fleet.Response, 1)
		go func() {
			r, err := c.Call(ctx, "tools/call", with(manage("append", "approved.txt"), "arguments", map[string]any{"action": "append", "path": "approved.txt", "content": "+once"}))
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		var id string
		select {
		case id = <-ids:
		case r := <-done:
			t.Fatalf("the call ended without asking for approval: %+v", r)
		case <-ctx.Done():
			t.Fatal("no URL elicitation within the bound")
		}
		if !approval.ValidID(id) {
			t.Fatalf("elicitation id %q is no approval request's", id)
		}
		// Another replica's service on the same stores approves it.
		svc := f.Approvals()
		if _, err := svc.Approve(ctx, id, approval.Approver{Principal: "", Name: "operator"}); err != nil {
			t.Fatal(err)
		}
		var r *fleet.Response
		select {
		case r = <-done:
		case <-ctx.Done():
			t.Fatal("the waiting call was not released within the bound")
		}
		if r == nil || r.Error != nil || r.Result["isError"] == true || !strings.Contains(r.Text(), "appended") {
			t.Fatalf("the approved call on %s: %+v", b.Name, r)
		}
		got, err := os.ReadFile(filepath.Join(files, "approved.txt"))
		if err != nil || string(got) != "x+once" {
			t.Errorf("approved.txt holds %q (%v), want the append run once", got, err)
		}
		req, err := svc.Get(ctx, id, "")
		if err != nil || req.State != approval.Used {
			t.Errorf("request %s after the call: %+v, %v", id, req, err)
		}
	})

	t.Run("a confidential result is redacted by every replica", func(t *testing.T) {
		for _, rep := range f.Replicas {
			for _, era := range []string{fleet.Modern, fleet.Legacy} {
				c := &fleet.Client{URL: rep.URL, Version: era}
				r := call(t, c, "tools/call", manage("read", "secret.txt"))
				if r.Error != nil || strings.Contains(string(r.Raw), "alice@") || !strings.Contains(r.Text(), "[REDACTED:email]") {
					t.Errorf("%s, %s: secret.txt read as %s", rep.Name, era, r.Raw)
				}
				c.Close(ctx)
			}
		}
	})

	t.Run("every call is in the shared audit log once", func(t *testing.T) {
		const n = 12
		want := map[string]string{}
		for i := range n {
			path := "audit-" + string(rune('a'+i)) + ".txt"
			mkdirs(t, files, path)
			era := fleet.Modern
			if i%2 == 1 {
				era = fleet.Legacy
			}
			c := &fleet.Client{URL: f.URL, Version: era}
			r := call(t, c, "tools/call", manage("read", path))
			if r.Error != nil || r.Result["isError"] == true {
				t.Fatalf("read %s: %s", path, r.Raw)
			}
			want[path] = r.Replica
			c.Close(ctx)
		}
		served := map[string]bool{}
		for _, rep := range want {
			served[rep] = true
		}
		if len(served) < 2 {
			t.Errorf("the calls were served by %v, want both replicas", served)
		}
		recs, err := f.Audit(ctx, audit.Filter{Server: "files", Tool: "manage_files", Effect: "read"})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, rec := range recs {
			var a struct{ Path string }
			json.Unmarshal(rec.Args, &a)
			if _, ok := want[a.Path]; ok {
				seen[a.Path]++
				if rec.Outcome != audit.OutcomeOK {
					t.Errorf("%s: outcome %q", a.Path, rec.Outcome)
				}
			}
		}
		for path, rep := range want {
			if seen[path] != 1 {
				t.Errorf("the read of %s (served by %s) is in the audit %d times", path, rep, seen[path])
			}
		}
	})
}
