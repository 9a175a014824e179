package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/pinpage"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// pinCheckTimeout bounds one upstream's check against the pin store.
const pinCheckTimeout = 10 * time.Second

// pinChecks checks each upstream's listing against its pins and keeps
// what the last check of each gave. Rebuild goroutine only.
type pinChecks struct {
	pinner *pin.Pinner
	logger *slog.Logger
	last   map[string]pinned // by upstream
}

func newPinChecks(p *pin.Pinner, logger *slog.Logger) *pinChecks {
	if p == nil {
		return nil
	}
	return &pinChecks{pinner: p, logger: logger, last: map[string]pinned{}}
}

// pinned is what the last check of one upstream's tools gave: the listing
// to serve for the upstream's own. Rebuild goroutine only.
type pinned struct {
	from *catalog.Listing // the upstream's listing
	out  *catalog.Listing // what is served: quarantined tools as their stand-ins
	// quarantined names the quarantined tools and the definitions they
	// wait on; a re-check that gives another one changes the listing.
	quarantined string
	failed      bool // the store could not be read: the tools are not served
}

// recheck reports whether the last check left something that an approval
// or the store's return releases, which only a new check sees (the
// upstream says nothing).
func (p pinned) recheck() bool { return p.failed || p.quarantined != "" }

// PinsPage returns the page's view of the pins of p, to give the page
// (page.Options.Pins): it lists pinned and quarantined tools and approves a
// changed definition in the name of the principal signed in. A gateway
// built with p as Options.Pinner lists the approved tool again at its next
// check of the pins (within pin.Options.Refresh), and its calls go ahead at
// once.
func PinsPage(p *pin.Pinner) page.Pins { return pinpage.New(p) }

// check checks an upstream's listing against its pins and returns what
// to serve: its tools as listed, quarantined ones replaced by their pinned
// definition (pin.Quarantined). When the pins cannot be read the upstream's
// tools are not served (a problem says why) until a later check can.
func (pc *pinChecks) check(ctx context.Context, l *catalog.Listing) (pinned, *catalog.Problem) {
	p := pinned{from: l, out: l}
	tools := make([]*mcp.Tool, 0, len(l.Tools))
	byName := make(map[string]*catalog.Tool, len(l.Tools))
	for _, t := range l.Tools {
		if t.Tool == nil {
			continue // not decoded: catalog.Build skips it with a problem
		}
		if _, dup := byName[t.Name]; dup {
			continue // catalog.Build reports the clash
		}
		tools = append(tools, t.Tool)
		byName[t.Name] = t
	}
	ctx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
	defer cancel()
	vs, err := pc.pinner.Check(ctx, l.Upstream, tools)
	if err != nil {
		out := *l
		out.Tools = nil
		p.out, p.failed = &out, true
		return p, &catalog.Problem{Upstream: l.Upstream, Kind: "tool", Name: "*",
			Reason: "not served: the definitions its tools were pinned to cannot be checked: " + err.Error()}
	}
	var q strings.Builder
	var out *catalog.Listing
	for _, v := range vs {
		pc.log(l.Upstream, v)
		if v.State != pin.StateQuarantined {
			continue
		}
		fmt.Fprintf(&q, "%s\x00%s\x00", v.Name, v.Fingerprint)
		// The stand-in as the upstream's tools are: its JSON, and the
		// SDK's decoding of it.
		raw, err := json.Marshal(v.Serve)
		var tool mcp.Tool
		if err == nil {
			err = json.Unmarshal(raw, &tool)
		}
		toolp := &tool
		if err != nil {
			// Cannot happen (a pinned definition encodes); were it to,
			// the tool is not served rather than served as changed.
			raw, toolp = nil, nil
		}
		if out == nil {
			c := *l
			c.Tools = make([]*catalog.Tool, len(l.Tools))
			copy(c.Tools, l.Tools)
			out = &c
		}
		for i, t := range out.Tools {
			if t == byName[v.Name] {
				out.Tools[i] = &catalog.Tool{Upstream: t.Upstream, Name: t.Name, Raw: raw, Tool: toolp}
			}
		}
	}
	if out != nil {
		p.out = out
	}
	p.quarantined = q.String()
	return p, nil
}

// log logs what a check did to one tool.
func (pc *pinChecks) log(server string, v pin.Verdict) {
	attrs := []any{"server", server, "tool", text.Clip(v.Name, 200), "fingerprint", v.Fingerprint}
	if v.Diff != nil {
		attrs = append(attrs, "changed", text.Clip(v.Diff.Summary(), 200))
	}
	switch v.Event {
	case pin.EventPinned:
		pc.logger.Debug("tool definition pinned at first sight", attrs...)
	case pin.EventQuarantined:
		pc.logger.Warn("tool quarantined: its definition changed since it was approved; calls are refused until someone approves it (preflight pins)", attrs...)
	case pin.EventChanged:
		pc.logger.Warn("tool definition changed since it was approved; it stays callable (pin: warn) until someone approves it (preflight pins)", attrs...)
	case pin.EventAccepted:
		pc.logger.Info("tool definition changed and only adds caution: accepted as its pin", attrs...)
	case pin.EventReleased:
		pc.logger.Info("tool serves its pinned definition again: released", attrs...)
	}
}

// listings checks each upstream's listing against its pins, reusing the
// last check of a listing that did not change and needs none, and returns
// the listings to serve with the problems found. A nil pinChecks serves
// them as they are.
func (pc *pinChecks) listings(ctx context.Context, listings []*catalog.Listing) ([]*catalog.Listing, []catalog.Problem) {
	if pc == nil {
		return listings, nil
	}
	var problems []catalog.Problem
	seen := make(map[string]bool, len(listings))
	out := make([]*catalog.Listing, len(listings))
	for i, l := range listings {
		seen[l.Upstream] = true
		last, ok := pc.last[l.Upstream]
		if !ok || last.from != l || last.recheck() {
			var pr *catalog.Problem
			last, pr = pc.check(ctx, l)
			if pr != nil {
				problems = append(problems, *pr)
			}
			pc.last[l.Upstream] = last
		}
		out[i] = last.out
	}
	for name := range pc.last {
		if !seen[name] {
			delete(pc.last, name) // down: checked again when it is back
		}
	}
	return out, problems
}

// moved checks again the upstreams whose last check left tools
// quarantined (or failed), and reports whether what is served would
// change: an approval, by this process or another sharing the store,
// releases a tool without its upstream saying anything.
func (pc *pinChecks) moved(ctx context.Context) bool {
	for name, last := range pc.last {
		if !last.recheck() {
			continue
		}
		now, _ := pc.check(ctx, last.from)
		if now.quarantined != last.quarantined || now.failed != last.failed {
			return true
		}
		pc.last[name] = now
	}
	return false
}
