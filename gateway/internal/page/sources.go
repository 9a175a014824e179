package page

import (
	"context"
	"iter"
	"net/url"
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

// Connections are the upstreams that sign in with OAuth, which each
// principal connects (or an admin connects once, for a shared one).
type Connections interface {
	// Connections lists the upstreams and principal's connection of each.
	Connections(ctx context.Context, principal string) ([]Connection, error)
	// Connect starts principal's sign-in to server and returns the URL to
	// send their browser to.
	Connect(ctx context.Context, principal, server string) (string, error)
	// Connected finishes a sign-in from the authorization server's
	// redirect and returns the server it connected. The page has checked
	// that the browser is the one it sent.
	Connected(ctx context.Context, query url.Values) (server string, err error)
	// Disconnect forgets principal's connection of server.
	Disconnect(ctx context.Context, principal, server string) error
	// ClientMetadata is the gateway's OAuth client ID metadata document.
	ClientMetadata() ([]byte, error)
	// Shared reports whether server's connection is one for everybody,
	// which only an admin connects.
	Shared(server string) bool
}

// Connection is one upstream that signs in, as a principal has it.
type Connection struct {
	Server string
	// Shared: one connection, made by an admin, serves everybody.
	Shared bool
	// Status is "" when not connected, else connected, refresh_failed or
	// revoked; Reason says why it is not connected.
	Status, Reason string
	Scopes         []string
	// Expires is when the current token expires (zero: unknown).
	Expires time.Time
	Updated time.Time
}
