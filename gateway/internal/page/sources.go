package page

import (
	"context"
	"iter"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/safety"
)

// Approvals is what the page needs of the approvals: an
// *approval.Service.
type Approvals interface {
	List(ctx context.Context, viewer string, limit int) ([]*approval.Request, error)
	Get(ctx context.Context, id, viewer string) (*approval.Request, error)
	Approve(ctx context.Context, id string, by approval.Approver) (*approval.Request, error)
	Deny(ctx context.Context, id string, by approval.Approver) (*approval.Request, error)
	MayDecide(principal string, r *approval.Request) bool
}

// AuditLog reads the audit log: an audit.Store.
type AuditLog interface {
	Query(ctx context.Context, f audit.Filter) iter.Seq2[*audit.Record, error]
}

// Safety gives the safety tables of the gateway's tools, one per upstream
// server, built with package safety from what the gateway knows (its
// listings, resolutions and overrides).
type Safety interface {
	SafetyTables(ctx context.Context) ([]*safety.Table, error)
}

// Pins lists the pinned tool definitions and approves changed ones.
type Pins interface {
	Pins(ctx context.Context) ([]Pin, error)
	// ApprovePin makes the definition of digest candidate the pinned one
	// of server's tool and lifts its quarantine. It fails if the tool's
	// candidate is no longer that definition.
	ApprovePin(ctx context.Context, server, tool, candidate string, by Identity) error
}

// Pin is one upstream tool's pinned definition.
type Pin struct {
	Server, Tool string
	// Mode is the server's pinning mode: strict, warn or off.
	Mode string
	// Digest names the pinned definition; PinnedAt is when it was pinned
	// and PinnedBy who approved it ("" for the first definition seen).
	Digest   string
	PinnedAt time.Time
	PinnedBy string
	// Quarantined reports a tool whose definition changed and whose calls
	// are refused until a person approves the new one.
	Quarantined bool
	// Candidate names the changed definition, Seen is when it was first
	// seen, and Changes say what changed in words
	// ("destructiveHint: true -> false").
	Candidate string
	Seen      time.Time
	Changes   []string
}
