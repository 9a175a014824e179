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
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/servebench"
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
	g, err := startGateway(preflight, dir, s)
	if err != nil {
		return err
	}
	defer func() {
		g.Stop()
		if b, err := os.ReadFile(g.Log); err == nil {
			fmt.Fprintf(stderr, "--- the gateway's output\n%s", b)
		}
	}()
	if !signsIn(s) {
		return play(ctx, s, "http://"+g.addr+"/mcp", nil)
	}
	// A person signs in to the page and connects the upstream there, as
	// the Connections view offers; the gateway then lists the upstream
	// with that connection.
	b := newBrowser(g.Log)
	if err := b.signIn(ctx); err != nil {
		return err
	}
	health := "http://" + g.addr + "/healthz"
	for n := 1; ; n++ {
		if err := b.connect(ctx, "http://"+g.addr+"/ui/connections/upstream/connect"); err != nil {
			return err
		}
		// The upstream connects with the new grant: up, or it refuses it
		// (asking for more scope, or naming another authorization
		// server) and waits for somebody to connect it again.
		if err := waitUpstream(health, func(state string, _ bool) bool { return state != "signin" }); err != nil {
			return err
		}
		if err := waitUpstream(health, func(state string, served bool) bool { return up(state, served) || state == "signin" }); err != nil {
			return err
		}
		if state, _ := upstreamState(health); state == "up" || n == maxConnects {
			break
		}
	}
	return play(ctx, s, "http://"+g.addr+"/mcp", b)
}

// signsIn reports whether the scenario's server needs the gateway to
// sign in to it.
func signsIn(s Scenario) bool { return strings.HasPrefix(s.Name, "auth/") }

// cimdURL is the client ID metadata document the suite's authorization
// servers expect (their example clients use it).
const cimdURL = "https://conformance-test.local/client-metadata.json"

// clientSecretEnv passes a pre-registered client's secret to the gateway.
const clientSecretEnv = "CONFORMANCE_CLIENT_SECRET"

// oauthConfig is the server's auth section for a scenario that signs in:
// the pre-registered client of MCP_CONFORMANCE_CONTEXT, if it names one.
func oauthConfig(s Scenario) (yaml string, env []string) {
	yaml = "    auth: oauth\n    oauth:\n      clientMetadataUrl: " + strconv.Quote(cimdURL) + "\n"
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if s.Context != "" && json.Unmarshal([]byte(s.Context), &c) == nil && c.ClientID != "" {
		yaml += "      clientId: " + strconv.Quote(c.ClientID) + "\n"
		if c.ClientSecret != "" {
			yaml += "      clientSecretEnv: " + clientSecretEnv + "\n"
			env = append(env, clientSecretEnv+"="+c.ClientSecret)
		}
	}
	return yaml, env
}

// gateway is a started `preflight serve`.
type gateway struct {
	*servebench.Process
	addr string
}

// startGateway writes a configuration naming upstream as the only server
// and starts preflight with it on a free loopback port, with HOME and the
// XDG directories in dir, and waits until it answers /healthz.
func startGateway(preflight, dir string, s Scenario) (*gateway, error) {
	// Decisions are recorded, not enforced: the suite's tools carry no
	// annotations, so the defaults would ask before each call, and what is
	// tested is the protocol, not the policy. Pins, approvals and the audit
	// log stay in dir.
	config := "servers:\n" +
		"  upstream:\n" +
		"    type: http\n" +
		"    url: " + strconv.Quote(s.Upstream) + "\n"
	var secrets []string
	if signsIn(s) {
		auth, env := oauthConfig(s)
		config += auth
		secrets = env
	}
	config += "decisions:\n" +
		"  mode: dry-run\n"
	path := filepath.Join(dir, "preflight.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	env := []string{"HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
	env = append(env, secrets...)
	// Port 0: the suite starts every scenario at once, and a free port
	// picked beforehand may be another's by the time it is bound. The
	// gateway prints the address it listens on.
	p, err := servebench.Start(preflight, []string{"serve", "-config", path, "-http", "127.0.0.1:0", "-log-level", "debug"}, env, filepath.Join(dir, "preflight.log"))
	if err != nil {
		return nil, err
	}
	addr, err := listening(p)
	health := "http://" + addr + "/healthz"
	if err == nil {
		err = p.WaitHTTP(health, `"status"`)
	}
	if err == nil {
		err = waitUpstream(health, settled)
	}
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("preflight serve: %w", err)
	}
	return &gateway{Process: p, addr: addr}, nil
}

// servedAt finds the address in the gateway's start-up output.
var servedAt = regexp.MustCompile(`health: http://([^/\s]+)/healthz`)

// listening returns the address the gateway p listens on, once it has
// printed it.
func listening(p *servebench.Process) (string, error) {
	for deadline := time.Now().Add(settleTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p.Exited() {
			return "", errors.New("the gateway exited before it served")
		}
		data, err := os.ReadFile(p.Log)
		if err != nil {
			return "", err
		}
		if m := servedAt.FindSubmatch(data); m != nil {
			return string(m[1]), nil
		}
	}
	return "", errors.New("the gateway did not say where it serves")
}

// settleTimeout bounds the wait for the gateway's first connection to its
// upstream.
const settleTimeout = time.Minute

// settled: the first connection to the upstream has ended: up with its
// catalog served, down (whose error the client's requests then meet), or
// waiting for somebody to connect it on the page.
func settled(state string, served bool) bool {
	return state == "down" || state == "signin" || up(state, served)
}

// up: the upstream is up with its catalog served.
func up(state string, served bool) bool { return state == "up" && served }

// upstreamState is the upstream's state in the gateway's health.
func upstreamState(url string) (string, error) {
	var state string
	err := waitUpstream(url, func(s string, _ bool) bool { state = s; return true })
	return state, err
}

// waitUpstream polls the gateway's health until done says its upstream's
// state (and whether the gateway serves all of its tools) is reached.
func waitUpstream(url string, done func(state string, served bool) bool) error {
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
		if done(u.State, h.Tools == u.Tools) {
			return nil
		}
	}
	return fmt.Errorf("the upstream did not reach the state awaited within %v: %s", settleTimeout, last)
}
