package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// Paths the gateway serves over HTTP.
const (
	// MCPPath is the MCP endpoint, both protocol eras on one URL.
	MCPPath = endpoint.Path
	// HealthPath answers a JSON [Health] report.
	HealthPath = "/healthz"
	// MetricsPath serves the Prometheus metrics (docs/metrics.md), unless
	// they are off.
	MetricsPath = "/metrics"
)

// readHeaderTimeout bounds how long a client may take to send headers.
const readHeaderTimeout = 10 * time.Second

// Health is the gateway's health report.
type Health struct {
	// Status is "ok" when every upstream is up and every store answers,
	// "degraded" when some are not or do not, "stopping" during shutdown.
	Status    string            `json:"status"`
	Upstreams []upstream.Health `json:"upstreams"`
	// Tools, Prompts and Resources count what clients see.
	Tools     int               `json:"tools"`
	Prompts   int               `json:"prompts"`
	Resources int               `json:"resources"`
	Skipped   []catalog.Problem `json:"skipped,omitempty"`
	// Stores says where the gateway keeps its state and whether each
	// store answered its latest ping (status is "degraded" when one did
	// not).
	Stores []StoreHealth `json:"stores,omitempty"`
	// Runtime identifies the process and shows its growth.
	Runtime Runtime `json:"runtime"`
}

// Health reports which upstreams are up, what is served, and which
// stores answer (pinged at most every 5 s, each within 1 s).
func (g *Gateway) Health() Health {
	snap := g.state.Load()
	h := Health{Status: "ok", Tools: len(snap.tools), Prompts: len(snap.prompts), Resources: len(snap.resources) + len(snap.templates), Skipped: snap.problems, Runtime: readRuntime()}
	for _, m := range g.ups.Load().members {
		c := m.conn
		uh := c.Health()
		h.Upstreams = append(h.Upstreams, uh)
		if uh.State != upstream.StateUp && !(uh.State == upstream.StateIdle && c.Spec().Lazy) {
			h.Status = "degraded"
		}
	}
	h.Stores = g.stores.health()
	for _, s := range h.Stores {
		if !s.Up {
			h.Status = "degraded"
		}
	}
	g.mu.Lock()
	if g.stopping {
		h.Status = "stopping"
	}
	g.mu.Unlock()
	return h
}

// Handler returns the MCP endpoint as an http.Handler (both eras on one
// URL; mount it at MCPPath), behind Options.Auth (or, without it, the
// anonymous authenticator, which answers loopback requests only). A
// 2026-07-28 client that goes away cancels its call, down to the upstream.
// A legacy session is its opener's: another principal naming it is
// answered 404, as for an unknown session.
func (g *Gateway) Handler() http.Handler {
	ep := endpoint.NewHandler(g.server, &endpoint.Options{
		Logger:             quietlog.Warn(g.logger),
		SessionTimeout:     g.opts.SessionIdle,
		MaxSessions:        g.opts.MaxSessions,
		MaxSessionsPerUser: g.opts.MaxSessionsPerPrincipal,
		Stateless:          &mcp.StreamableHTTPOptions{PropagateRequestCancellation: true},
	})
	// A session is checked to be the requester's before the entry acts
	// on its id (a cancellation, a DELETE).
	return g.authenticator().Middleware(ep.Guard(g.entry.Handler(ep)))
}

// authenticator returns Options.Auth, or the anonymous one, which serves
// loopback only.
func (g *Gateway) authenticator() *auth.Authenticator {
	if g.opts.Auth != nil {
		return g.opts.Auth
	}
	return g.anonymous
}

// checkListener refuses to serve without authentication on anything but a
// loopback address.
func (g *Gateway) checkListener(addr string) error {
	if g.opts.Auth != nil && !g.opts.Auth.Anonymous() {
		return nil
	}
	_, err := auth.Anonymous(&auth.Options{Addr: addr})
	if err != nil {
		return errors.New("gateway: " + strings.TrimPrefix(err.Error(), "auth: "))
	}
	return nil
}

// healthHandler answers HealthPath: 200 while serving (with the report),
// 503 while stopping. Behind guardOps, brief answers the status alone.
func (g *Gateway) healthHandler(brief bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := g.Health()
		if brief {
			h = Health{Status: h.Status}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if h.Status == "stopping" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(h)
	})
}

// MetricsHandler serves the gateway's Prometheus metrics (mounted at
// MetricsPath by Serve); nil when they are off.
func (g *Gateway) MetricsHandler() http.Handler {
	if g.metrics == nil {
		return nil
	}
	return g.metrics.Handler()
}

// guardOps puts full (the health report, the metrics: upstream names,
// tools, call counts) behind the gateway's authentication, as the MCP
// endpoint: without it, only a request to a loopback address naming a
// loopback host (not a page of another site, rebound by DNS) gets full.
// With it, a request needs a client's token, and one without any gets
// brief, or the challenge when brief is nil (a load balancer's or
// orchestrator's probe reads the status without a token).
func (g *Gateway) guardOps(full, brief http.Handler) http.Handler {
	a := g.authenticator()
	authed := a.Middleware(full)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case a.Anonymous() && !page.HostAllowed(nil, r.Host):
			http.Error(w, "This gateway does not serve the host "+strings.ToValidUTF8(text.Clip(r.Host, 80), "?")+
				": address it by a loopback name (127.0.0.1, [::1], localhost).", http.StatusMisdirectedRequest)
		case !a.Anonymous() && brief != nil && len(r.Header.Values("Authorization")) == 0:
			brief.ServeHTTP(w, r)
		default:
			authed.ServeHTTP(w, r)
		}
	})
}

// Serve serves the gateway over HTTP on ln (MCPPath, HealthPath, the
// page at PagePath when Options.Page is set, and the protected-resource
// metadata of Options.Auth) until ctx is done; then it stops accepting, ends legacy clients' idle event
// streams, lets calls in flight finish within ShutdownGrace, closes what
// remains and returns. It does not stop the upstreams: call Close after.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	return g.serveHTTP(ctx, ln, true)
}

// HasPage reports whether the gateway has a page to serve (Options.Page).
func (g *Gateway) HasPage() bool { return g.ui != nil }

// ServePage serves only the page at PagePath and HealthPath on ln, until
// ctx is done, as Serve does: beside [Gateway.ServeStdio], where a person
// approves what a desktop client's calls wait for, without a second MCP
// endpoint.
func (g *Gateway) ServePage(ctx context.Context, ln net.Listener) error {
	if g.ui == nil {
		return errors.New("gateway: no page to serve (Options.Page is nil)")
	}
	return g.serveHTTP(ctx, ln, false)
}

func (g *Gateway) serveHTTP(ctx context.Context, ln net.Listener, mcpToo bool) error {
	if err := g.checkListener(ln.Addr().String()); err != nil {
		return err
	}
	if g.ui != nil && g.PageURL() == "" {
		u := "http://" + ln.Addr().String() + PagePath
		g.pageURL.CompareAndSwap(nil, &u)
	}
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	mux := http.NewServeMux()
	mux.Handle(HealthPath, g.guardOps(g.healthHandler(false), g.healthHandler(true)))
	if mcpToo {
		mux.Handle(MCPPath, endStreamsOn(streams, g.Handler()))
		g.authenticator().Handle(mux)
		if h := g.MetricsHandler(); h != nil {
			mux.Handle(MetricsPath, g.guardOps(h, nil))
		}
	}
	if g.ui != nil {
		mux.Handle(PagePath+"/", g.ui)
		mux.Handle(PagePath, http.RedirectHandler(PagePath+"/", http.StatusSeeOther))
	}
	// The same bounds as endpoint.Serve: a slow body cannot hold a
	// connection, and event streams keep their write side.
	var fresh freshConns
	srv := &http.Server{Handler: entry.WriteDeadlines(mux), ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout: endpoint.DefaultReadTimeout, IdleTimeout: endpoint.DefaultIdleTimeout, ConnState: fresh.track}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.stopping = true
	g.broadcast()
	g.mu.Unlock()
	endStreams()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.ShutdownGrace)
	defer cancel()
	// Shutdown waits up to 5 s for a connection that sent no request yet
	// (browsers open one ahead of time); it carries no call: close it.
	fresh.close()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("gateway: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("gateway: calls still running after %v were cut: %w", g.opts.ShutdownGrace, err)
	}
	return nil
}

// freshConns tracks the connections that have not sent a request yet.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case st == http.StateNew && f.done:
		c.Close()
	case st == http.StateNew:
		if f.conns == nil {
			f.conns = map[net.Conn]struct{}{}
		}
		f.conns[c] = struct{}{}
	default:
		delete(f.conns, c)
	}
}

// close closes the connections that never sent a request, and those
// that come later.
func (f *freshConns) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

// endStreamsOn gives GET requests (legacy clients' standalone event
// streams, which carry no call) a context that ends when done does.
func endStreamsOn(done context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			h.ServeHTTP(w, req)
			return
		}
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		stop := context.AfterFunc(done, cancel)
		defer stop()
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}

// ServeStdio serves one client over in and out (newline-delimited
// JSON-RPC, as a desktop client that starts the gateway as a process
// expects) until ctx is done or the client goes away. Every line is read
// by the entry, as every HTTP request is.
func (g *Gateway) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	err := g.server.Run(ctx, g.entry.Stdio(in, out))
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
