// Package clientconf acts as a client of the official conformance suite's
// client leg through the gateway: it starts `preflight serve` with the
// suite's test server as the only upstream and plays the scenario's client
// against the gateway, so the suite scores what the gateway, as a client
// of its upstream, sends. The program is cmd/confclient; the test is
// TestClientConformance (conformance/README.md, "Client leg").
package clientconf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/servebench"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// Scenario is what the suite asks of one client run.
type Scenario struct {
	Name     string // MCP_CONFORMANCE_SCENARIO
	Protocol string // MCP_CONFORMANCE_PROTOCOL_VERSION: the era to speak to the gateway
	Context  string // MCP_CONFORMANCE_CONTEXT, JSON, when the scenario has one
	Upstream string // the suite's test server
}

// Run starts the gateway binary preflight in front of s.Upstream, with its
// state in dir, plays the scenario against it, stops it, and copies its
// output to stderr.
func Run(ctx context.Context, preflight, dir string, s Scenario, stderr io.Writer) error {
	g, err := startGateway(preflight, dir, s.Upstream)
	if err != nil {
		return err
	}
	defer func() {
		g.Stop()
		if b, err := os.ReadFile(g.Log); err == nil {
			fmt.Fprintf(stderr, "--- the gateway's output\n%s", b)
		}
	}()
	return play(ctx, s, "http://"+g.addr+"/mcp")
}

// gateway is a started `preflight serve`.
type gateway struct {
	*servebench.Process
	addr string
}

// startGateway writes a configuration naming upstream as the only server
// and starts preflight with it on a free loopback port, with HOME and the
// XDG directories in dir, and waits until it answers /healthz.
func startGateway(preflight, dir, upstream string) (*gateway, error) {
	// Decisions are recorded, not enforced: the suite's tools carry no
	// annotations, so the defaults would ask before each call, and what is
	// tested is the protocol, not the policy. Pins, approvals and the audit
	// log stay in dir.
	config := "servers:\n" +
		"  upstream:\n" +
		"    type: http\n" +
		"    url: " + strconv.Quote(upstream) + "\n" +
		"decisions:\n" +
		"  mode: dry-run\n"
	path := filepath.Join(dir, "preflight.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env := []string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	p, err := servebench.Start(preflight, []string{"serve", "-config", path, "-http", addr, "-log-level", "debug"}, env, filepath.Join(dir, "preflight.log"))
	if err != nil {
		return nil, err
	}
	health := "http://" + addr + "/healthz"
	err = p.WaitHTTP(health, `"status"`)
	if err == nil {
		err = waitSettled(health)
	}
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("preflight serve: %w", err)
	}
	return &gateway{Process: p, addr: addr}, nil
}

// settleTimeout bounds the wait for the gateway's first connection to its
// upstream.
const settleTimeout = time.Minute

// waitSettled polls the gateway's health until its first connection to the
// upstream has ended: up with its catalog served, or down (an upstream it
// cannot sign in to, whose error the client's requests then meet).
func waitSettled(url string) error {
	var last string
	for deadline := time.Now().Add(settleTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		var h struct {
			Tools     int `json:"tools"`
			Upstreams []struct {
				State string `json:"state"`
				Tools int    `json:"tools"`
			} `json:"upstreams"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h)
		resp.Body.Close()
		if err != nil || len(h.Upstreams) != 1 {
			last = fmt.Sprintf("health: %v, %d upstreams", err, len(h.Upstreams))
			continue
		}
		u := h.Upstreams[0]
		last = "upstream " + u.State
		if u.State == "down" || u.State == "up" && h.Tools == u.Tools {
			return nil
		}
	}
	return fmt.Errorf("the upstream's first connection did not end within %v: %s", settleTimeout, last)
}
