//go:build integration

package fleet_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// slowServers adds two upstreams of the slow server (package slow) over one
// marker directory: slow, whose calls time out after 3 s, and crash, with
// the default timeout, whose waits with a key starting "idem" are
// idempotent by a rule and the others not. Both are plain writes, so
// that the decision stage allows them.
const slowServers = `  slow:
    command: ${FLEET_BIN}/slow
    args: [-dir, "${FLEET_DATA}/slow"]
    timeouts: {call: 3s}
    rules:
      - name: a-wait-is-a-write
        tool: wait
        when: "true"
        annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: false}
        hints: {effect: write, idempotent: false, requiresConfirmation: false}
  crash:
    command: ${FLEET_BIN}/slow
    args: [-dir, "${FLEET_DATA}/slow"]
    rules:
      - name: idem-waits-are-idempotent
        tool: wait
        when: args.key.startsWith("idem")
        annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: true}
        hints: {effect: write, idempotent: true, requiresConfirmation: false}
      - name: other-waits-are-not
        tool: wait
        when: "true"
        annotations: {readOnlyHint: false, destructiveHint: false, idempotentHint: false}
        hints: {effect: write, idempotent: false, requiresConfirmation: false}
`

func wait(server, key string) map[string]any {
	return map[string]any{"name": server + "__wait", "arguments": map[string]any{"key": key}}
}

// errorData is a gateway error's data for a transient upstream failure.
type errorData struct {
	Outcome, Reason, Failure string
	Retried                  bool
	Attempts                 int
}

func dataOf(t *testing.T, r *fleet.Response) errorData {
	t.Helper()
	var d errorData
	if r.Error == nil || json.Unmarshal(r.Error.Data, &d) != nil {
		t.Fatalf("want an error with data: %s", r.Raw)
	}
	return d
}

// blocked starts the call of the slow server's wait with key through c, which
// blocks in the upstream, and returns once the upstream holds it: its
// process id and the call's response, to come.
func blocked(t *testing.T, ctx context.Context, c *fleet.Client, dir, server, key string) (int, <-chan *fleet.Response) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, key+".block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *fleet.Response, 1)
	go func() {
		r, err := c.Call(ctx, "tools/call", wait(server, key))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	pidFile := filepath.Join(dir, key+".pid")
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("%s: %q", pidFile, b)
			}
			return pid, done
		}
		select {
		case r := <-done:
			t.Fatalf("the call of %s with key %s ended before it blocked: %+v", server, key, r)
		case <-ctx.Done():
			t.Fatalf("the call of %s with key %s did not reach the upstream within the bound", server, key)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func response(t *testing.T, ctx context.Context, done <-chan *fleet.Response) *fleet.Response {
	t.Helper()
	select {
	case r := <-done:
		if r == nil {
			t.FailNow()
		}
		return r
	case <-ctx.Done():
		t.Fatal("the call did not end within the bound")
		return nil
	}
}

// TestUpstreamFaults checks, on the wire through the fleet, what a replica
// does when a stdio upstream is slow or dies mid-call.
func TestUpstreamFaults(t *testing.T) {
	f := fleet.Start(t, &fleet.Options{Servers: slowServers})
	dir := filepath.Join(f.Dir, "data", "slow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	t.Run("a slow upstream times out, is cancelled, and holds up no other", func(t *testing.T) {
		rep := f.Replicas[0]
		c := &fleet.Client{URL: rep.URL, Version: fleet.Modern}
		pid, done := blocked(t, ctx, c, dir, "slow", "slow-1")
		// Meanwhile the files server on the same replica answers, to
		// clients of both eras.
		for _, era := range []string{fleet.Modern, fleet.Legacy} {
			fc := &fleet.Client{URL: rep.URL, Version: era}
			if r := call(t, fc, "tools/call", manage("read", "notes.txt")); r.Error != nil || !strings.Contains(r.Text(), "shared notes") {
				t.Errorf("%s: a %s read while the slow call is held: %s", rep.Name, era, r.Raw)
			}
			fc.Close(ctx)
		}
		// (The reads were sent while the slow call was held: blocked returned
		// once the upstream had it. Whether they also finished before its 3 s
		// ran out depends on the machine, so it is not asserted.)
		r := response(t, ctx, done)
		d := dataOf(t, r)
		if r.Error.Code != -32603 || d.Failure != "timeout" || d.Outcome != "unknown" || d.Retried ||
			!strings.Contains(r.Error.Message, `upstream "slow" did not answer in time`) {
			t.Errorf("the slow call: %s", r.Raw)
		}
		// The cancellation reached the upstream's handler.
		for !exists(t, filepath.Join(dir, "slow-1.cancelled")) {
			select {
			case <-ctx.Done():
				t.Fatalf("the upstream never saw its call cancelled\n%s", rep.Log())
			case <-time.After(20 * time.Millisecond):
			}
		}
		// The same upstream process serves the next call.
		if r := call(t, c, "tools/call", wait("slow", "slow-2")); r.Error != nil || r.Text() != "done slow-2 "+strconv.Itoa(pid) {
			t.Errorf("the call after the timeout: %s (want it served by process %d)", r.Raw, pid)
		}
	})

	t.Run("an upstream killed mid-call", func(t *testing.T) {
		rep := f.Replicas[1]
		c := &fleet.Client{URL: rep.URL, Version: fleet.Modern}
		kill := func(pid int) {
			t.Helper()
			cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if err != nil || !strings.Contains(string(cmd), "/slow") {
				t.Fatalf("process %d is not the slow server: %q, %v", pid, cmd, err)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}

		// back waits until the replica has restarted the upstream the
		// given number of times and lists its tool again (while it
		// restarts, the tool is not listed: a call then is refused as
		// naming an unknown tool, which is not what this test asks).
		back := func(restarts int) {
			t.Helper()
			for {
				h, err := rep.Health(ctx)
				if err != nil {
					t.Fatal(err)
				}
				up := false
				for _, u := range h.Upstreams {
					if u.Name == "crash" {
						up = u.State == upstream.StateUp && u.Restarts == restarts
					}
				}
				if up && strings.Contains(string(call(t, c, "tools/list", nil).Raw), `"crash__wait"`) {
					return
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the killed upstream was not restarted %d times within the bound: %+v\n%s", restarts, h.Upstreams, rep.Log())
				case <-time.After(20 * time.Millisecond):
				}
			}
		}

		// Idempotent by its rule: retried on the restarted process.
		pid, done := blocked(t, ctx, c, dir, "crash", "idem-1")
		kill(pid)
		r := response(t, ctx, done)
		if r.Error != nil || !strings.HasPrefix(r.Text(), "done idem-1 ") || r.Text() == "done idem-1 "+strconv.Itoa(pid) {
			t.Fatalf("the idempotent call whose upstream (%d) was killed: %s\n%s", pid, r.Raw, rep.Log())
		}

		// Not idempotent: not sent again, the outcome unknown.
		back(1)
		pid, done = blocked(t, ctx, c, dir, "crash", "once-1")
		kill(pid)
		r = response(t, ctx, done)
		d := dataOf(t, r)
		if r.Error.Code != -32603 || d.Outcome != "unknown" || d.Reason != "not_idempotent" || d.Failure != "exited" || d.Retried ||
			!strings.Contains(r.Error.Message, "outcome is unknown") {
			t.Errorf("the call that is not idempotent, its upstream (%d) killed: %s", pid, r.Raw)
		}

		// The upstream came back after each kill, and calls succeed.
		back(2)
		r = call(t, c, "tools/call", wait("crash", "after-1"))
		if r.Error != nil || !strings.HasPrefix(r.Text(), "done after-1 ") || r.Text() == "done after-1 "+strconv.Itoa(pid) {
			t.Errorf("a call after the upstream was killed: %s", r.Raw)
		}
		// The idempotent call ran twice (killed, then retried), the
		// other once.
		b, err := os.ReadFile(filepath.Join(dir, "calls.log"))
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			key, _, _ := strings.Cut(line, " ")
			count[key]++
		}
		if count["idem-1"] != 2 || count["once-1"] != 1 || count["after-1"] != 1 {
			t.Errorf("calls the upstream saw: %v", count)
		}
	})

	// Last, as it kills a replica: a call held in r1 when r1 dies is lost
	// with it; the client's retry through the load balancer is served by
	// r2, once.
	t.Run("a replica killed mid-call: the retry is served by the other", func(t *testing.T) {
		victim, other := f.Replicas[0], f.Replicas[1]
		if err := os.WriteFile(filepath.Join(dir, "gone-1.block"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		c := &fleet.Client{URL: victim.URL, Version: fleet.Modern}
		lost := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, "tools/call", wait("crash", "gone-1"))
			lost <- err
		}()
		for !exists(t, filepath.Join(dir, "gone-1.pid")) {
			select {
			case err := <-lost:
				t.Fatalf("the call ended before it was held: %v", err)
			case <-ctx.Done():
				t.Fatalf("the call did not reach %s's upstream within the bound", victim.Name)
			case <-time.After(20 * time.Millisecond):
			}
		}
		f.Kill(victim)
		if err := <-lost; err == nil {
			t.Errorf("the call held in the killed %s answered", victim.Name)
		}
		lb := &fleet.Client{URL: f.URL, Version: fleet.Modern}
		r := call(t, lb, "tools/call", wait("crash", "gone-1"))
		if r.Error != nil || !strings.HasPrefix(r.Text(), "done gone-1 ") || r.Replica != other.Name {
			t.Errorf("the retry after %s was killed: served by %s: %s", victim.Name, r.Replica, r.Raw)
		}
		b, err := os.ReadFile(filepath.Join(dir, "calls.log"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "gone-1 "); n != 2 {
			t.Errorf("the upstreams saw gone-1 %d times, want 2 (the lost call and its retry)", n)
		}
	})
}
