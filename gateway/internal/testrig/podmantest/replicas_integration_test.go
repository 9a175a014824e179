//go:build integration

package podmantest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// TestReplicas runs two replicas from the image behind HAProxy with
// deploy/local/haproxy.cfg as shipped, sharing Redis and PostgreSQL: a
// delete's confirmation asked through HAProxy is answered to the other
// replica, runs once, and the same answer is refused on both.
func TestReplicas(t *testing.T) {
	p := New(t)
	img := p.Load(Image(t))
	rs := redistest.Start(t, nil)
	pg := pgtest.Start(t)
	up := startNotes(t)
	root, err := gobuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy = "/usr/sbin/haproxy"
	}
	ports := freeport.Addrs(t, 3)
	lb := ports[0]
	config := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(config, []byte(`servers:
  notes:
    url: `+up.url+`
redis:
  url: redis://`+rs.Addr()+`/0
requestState:
  keysEnv: PREFLIGHT_REQUEST_STATE_KEYS
approvals:
  store: postgres
  url: `+pg.DSN()+`
  pageUrl: http://`+lb+`/ui
`), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	keys := "PREFLIGHT_REQUEST_STATE_KEYS=k1:" + base64.StdEncoding.EncodeToString(secret)
	replicas := map[string]string{}
	for i, addr := range ports[1:] {
		name := fmt.Sprintf("r%d", i+1)
		c := p.Start("preflight-"+name, "--read-only", "--network", "host", "--env", keys,
			"--volume", "preflight-"+name+":/data", "--volume", config+":/etc/preflight/config.yaml:ro",
			img, "serve", "-http", addr, "-config", "/etc/preflight/config.yaml")
		if err := c.WaitHealthy(addr); err != nil {
			t.Fatalf("%v\n%s", err, c.Logs())
		}
		replicas[name] = "http://" + addr + gateway.MCPPath
	}
	cmd := exec.Command(haproxy, "-db", "-f", filepath.Join(root, "deploy", "local", "haproxy.cfg"))
	_, lbPort, _ := net.SplitHostPort(lb)
	_, p1, _ := net.SplitHostPort(ports[1])
	_, p2, _ := net.SplitHostPort(ports[2])
	cmd.Env = append(os.Environ(), "PREFLIGHT_LB_PORT="+lbPort, "PREFLIGHT_REPLICA_1_PORT="+p1, "PREFLIGHT_REPLICA_2_PORT="+p2)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &fleet.Client{URL: "http://" + lb + gateway.MCPPath, Version: fleet.Modern}
	params := map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "todo"}}
	var r *fleet.Response
	deadline := time.Now().Add(startTimeout)
	for { // HAProxy counts a replica up after its first health check
		r, err = c.Call(ctx, "tools/call", params)
		if err == nil && r.Replica != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer through HAProxy within %v: %v", startTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	if r.Error != nil || r.Result["resultType"] != "input_required" || reqs["preflight/confirm"] == nil {
		t.Fatalf("the delete was not asked: %s", r.Raw)
	}
	other := "r1"
	if r.Replica == "r1" {
		other = "r2"
	}
	accept := map[string]any{"preflight/confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	answer := map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "todo"}, "inputResponses": accept, "requestState": r.Result["requestState"]}
	direct := &fleet.Client{URL: replicas[other], Version: fleet.Modern}
	a, err := direct.Call(ctx, "tools/call", answer)
	if err != nil {
		t.Fatal(err)
	}
	if a.Error != nil || a.Result["isError"] == true || a.Result["resultType"] == "input_required" {
		t.Fatalf("asked on %s, answered on %s: %s", r.Replica, other, a.Raw)
	}
	if n := up.deletes.Load(); n != 1 {
		t.Fatalf("the upstream ran %d deletes, want 1", n)
	}
	for _, name := range []string{"r1", "r2"} {
		again := &fleet.Client{URL: replicas[name], Version: fleet.Modern}
		a, err := again.Call(ctx, "tools/call", answer)
		if err != nil {
			t.Fatal(err)
		}
		if a.Error == nil && a.Result["isError"] != true {
			t.Errorf("the answer replayed on %s: %s", name, a.Raw)
		}
	}
	if n := up.deletes.Load(); n != 1 {
		t.Errorf("the upstream ran %d deletes, want 1", n)
	}
}
