package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
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
	return page.New(p.Login, o)
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
