package gateway

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// listChanged records that an upstream announced changed lists; the next
// rebuild tells the clients, even if the aggregate looks the same (the
// upstream may have changed and changed back, as a client could have seen).
func (g *Gateway) listChanged(_ *upstream.Conn, kinds upstream.ListKinds) {
	g.listChangedKinds(kinds)
	g.rebuildSoon()
}

// listChangedKinds has the next rebuild announce kinds.
func (g *Gateway) listChangedKinds(kinds upstream.ListKinds) {
	for {
		old := g.announce.Load()
		if g.announce.CompareAndSwap(old, old|uint32(kinds)) {
			break
		}
	}
}

func (g *Gateway) rebuildSoon() {
	select {
	case g.rebuildC <- struct{}{}:
	default:
	}
}

func (g *Gateway) rebuildLoop(ctx context.Context) {
	var lastProblems string
	// Quarantined tools are checked again as often as the pinner reads
	// its store, so that an approval releases them.
	var recheck <-chan time.Time
	if g.pins != nil {
		t := time.NewTicker(g.pins.pinner.Refresh())
		defer t.Stop()
		recheck = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.rebuildC:
		case <-recheck:
			if !g.pins.moved(ctx) {
				continue
			}
			g.listChangedKinds(upstream.ListTools)
		}
		snap := g.rebuild(ctx)
		if p := fmt.Sprint(snap.problems); p != lastProblems {
			lastProblems = p
			for _, pr := range snap.problems {
				g.logger.Warn("catalog item skipped", "server", pr.Upstream, "kind", pr.Kind, "name", text.Clip(pr.Name, 200), "reason", pr.Reason)
			}
		}
		g.mu.Lock()
		g.broadcast()
		g.mu.Unlock()
	}
}

// rebuild aggregates the listings of the upstreams that are up, mirrors
// the result into the SDK server and publishes it.
func (g *Gateway) rebuild(ctx context.Context) *snapshot {
	prev := g.state.Load()
	set := g.ups.Load()
	listings := make([]*catalog.Listing, 0, len(set.members))
	used := map[string]*catalog.Listing{}
	rr, _ := g.resolver().(ListingObserver)
	for _, m := range set.members {
		c := m.conn
		if l := c.Listing(); l != nil {
			if rr != nil {
				// The rules are checked against the upstream's tools as
				// soon as it lists them, not at its first call.
				rr.Listed(c.Name(), l, c.ServerInfo())
			}
			used[c.Name()] = l
			if n := set.namings[c.Name()]; !sameNaming(n, l.Naming) {
				// A reload changed how the upstream's names are
				// exposed, which needs no new connection.
				ll := *l
				ll.Naming = n
				l = &ll
			}
			listings = append(listings, l)
		}
	}
	listings, pinProblems := g.pins.listings(ctx, listings)
	v := catalog.Build(listings, set.multi)
	snap := &snapshot{set: set, view: v, version: prev.version + 1, upstreams: used, problems: append(slices.Clone(v.Problems), pinProblems...)}

	// What the SDK server refuses is not served; the rest is precomputed
	// as JSON.
	synced := g.mirror.Sync(v)
	snap.problems = append(snap.problems, synced.Problems...)
	for _, t := range synced.Tools {
		listed := asListed(g.decider, t)
		if m, ok := g.disclosure.minimal(t); ok {
			listed = m
		}
		snap.tools = append(snap.tools, toolListing(listed))
	}
	for _, p := range v.Prompts {
		snap.prompts = append(snap.prompts, withString(p.Raw, "name", p.Name, p.Exposed))
	}
	for _, r := range synced.Resources {
		snap.resources = append(snap.resources, withString(r.Raw, "uri", r.URI, r.Exposed))
	}
	for _, t := range synced.Templates {
		snap.templates = append(snap.templates, withString(t.Raw, "uriTemplate", t.URITemplate, t.Exposed))
	}
	if g.disclosure != nil {
		snap.resources = append(snap.resources, g.disclosure.resource)
		snap.templates = append(snap.templates, g.disclosure.template)
	}

	g.state.Store(snap)
	if kinds := upstream.ListKinds(g.announce.Swap(0)); kinds != 0 {
		g.mirror.Announce(kinds)
	}
	return snap
}
