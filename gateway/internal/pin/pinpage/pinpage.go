// Package pinpage shows a pin.Pinner's pins on the gateway's page and
// approves changed definitions from it: it implements page.Pins.
package pinpage

import (
	"context"
	"fmt"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
)

// Source is the page's view of a Pinner.
type Source struct{ p *pin.Pinner }

var _ page.Pins = (*Source)(nil)

// New returns the page's view of p.
func New(p *pin.Pinner) *Source { return &Source{p} }

// Pins lists every pinned tool. A changed definition is the candidate of
// a quarantined tool, and of a tool a warn-mode server serves changed
// (not quarantined: its calls go through until someone approves it).
func (s *Source) Pins(ctx context.Context) ([]page.Pin, error) {
	recs, err := s.p.Records(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]page.Pin, 0, len(recs))
	for _, r := range recs {
		v := page.Pin{Server: r.Server, Tool: r.Tool, Mode: string(s.p.Mode(r.Server)),
			Digest: r.Pinned.Fingerprint(), PinnedAt: r.PinnedAt, PinnedBy: r.ApprovedBy,
			Quarantined: r.State == pin.StateQuarantined}
		if r.Pending != nil {
			v.Candidate, v.Seen = r.Pending.Fingerprint(), r.PendingSince
			v.Changes = changes(pin.Compare(r.Pinned, r.Pending))
		}
		out = append(out, v)
	}
	return out, nil
}

// changes writes a diff as list items: one per field, a description's
// changed lines each as its own item after it.
func changes(d *pin.Diff) []string {
	var out []string
	for _, c := range d.Changes {
		if c.Lines == nil {
			out = append(out, c.String())
			continue
		}
		out = append(out, c.Field+":")
		for _, l := range c.Lines {
			out = append(out, "    "+l)
		}
	}
	if d.Omitted > 0 {
		out = append(out, fmt.Sprintf("... and %d more changes of the schemas", d.Omitted))
	}
	return out
}

// ApprovePin approves the candidate definition of server's tool in the
// name of the person signed in (their principal). It fails when the
// candidate is no longer the definition awaiting approval.
func (s *Source) ApprovePin(ctx context.Context, server, tool, candidate string, by page.Identity) error {
	who := by.Principal
	if strings.TrimSpace(who) == "" {
		who = by.Name
	}
	if strings.TrimSpace(who) == "" {
		who = "page operator"
	}
	_, err := s.p.Approve(ctx, server, tool, candidate, who)
	return err
}
