package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
	"github.com/preflightmcp/preflight/gateway/internal/signin"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

// newPage builds the page handler, or nil when the page is off.
func (g *Gateway) newPage() (http.Handler, error) {
	p := g.opts.Page
	if p == nil {
		return nil, nil
	}
	if p.Login == nil {
		return nil, errors.New("gateway: Page.Login is required")
	}
	if p.URL != "" {
		u := strings.TrimRight(p.URL, "/")
		g.pageURL.Store(&u)
	}
	o := &page.Options{
		Safety:   g,
		Sessions: p.Sessions,
		Hosts:    p.Hosts,
		Secure:   p.Secure,
		Prefix:   PagePath,
		Logger:   quietlog.Warn(g.logger),
	}
	// Nil interfaces stay nil: the page treats them as off.
	if g.opts.Approvals != nil {
		o.Approvals = g.opts.Approvals
	}
	if g.opts.AuditLog != nil {
		o.Audit = g.opts.AuditLog
	} else if g.opts.AuditStore != nil {
		o.Audit = g.opts.AuditStore
	}
	if g.opts.Pins != nil {
		o.Pins = g.opts.Pins
	} else if g.opts.Pinner != nil {
		o.Pins = PinsPage(g.opts.Pinner)
	}
	if g.signIn != nil {
		o.Connections = connectionsPage{g.signIn}
	}
	return page.New(p.Login, o)
}

// connectionsPage shows the upstreams that sign in on the page.
type connectionsPage struct{ m *signin.Manager }

func (c connectionsPage) Connections(ctx context.Context, principal string) ([]page.Connection, error) {
	grants, err := c.m.Grants(ctx, principal)
	if err != nil {
		return nil, err
	}
	var out []page.Connection
	for _, s := range c.m.Servers() {
		pc := page.Connection{Server: s.Name, Shared: s.Shared}
		if g, ok := grants[s.Name]; ok {
			pc.Status, pc.Reason, pc.Scopes, pc.Expires, pc.Updated = string(g.Status), g.Reason, strings.Fields(g.Scopes), g.Expiry, g.Updated
		}
		out = append(out, pc)
	}
	return out, nil
}

func (c connectionsPage) Connect(ctx context.Context, principal, server string) (string, error) {
	return c.m.Begin(ctx, principal, server)
}

func (c connectionsPage) Connected(ctx context.Context, q url.Values) (string, error) {
	_, server, err := c.m.Complete(ctx, q)
	return server, err
}

func (c connectionsPage) ClientMetadata() ([]byte, error) { return c.m.ClientMetadata() }

func (c connectionsPage) Shared(server string) bool { s, _ := c.m.Server(server); return s.Shared }

func (c connectionsPage) Disconnect(ctx context.Context, principal, server string) error {
	return c.m.Disconnect(ctx, principal, server)
}

// PageHandler returns the page as an http.Handler, to mount at PagePath
// (its paths start with it), or nil when Options.Page is nil.
func (g *Gateway) PageHandler() http.Handler {
	if g.ui == nil {
		return nil
	}
	return g.ui
}

// SafetyTables implements page.Safety: one table per upstream, built by
// package safety from the tools as the upstream lists them now.
func (g *Gateway) SafetyTables(context.Context) ([]*safety.Table, error) {
	v := g.View()
	var tables []*safety.Table
	for _, m := range g.ups.Load().members {
		c := m.conn
		t := &lint.Target{Kind: lint.KindServer, Source: c.Name(), Server: &mcp.Implementation{Name: c.Name()}}
		for _, tool := range v.Tools {
			if tool.Upstream != c.Name() {
				continue
			}
			lt, err := lint.ParseTool(asListed(g.decider, tool).Raw) // as clients read it
			if err != nil {
				continue // the catalog skipped it already
			}
			t.Tools = append(t.Tools, lt)
		}
		if len(t.Tools) > 0 {
			tables = append(tables, safety.FromTarget(t))
		}
	}
	return tables, nil
}
