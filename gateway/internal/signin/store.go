package signin

import (
	"context"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// Store keeps the grants, secrets sealed: a *vault.Vault.
type Store interface {
	Get(ctx context.Context, principal, server string) (*vault.Connection, error)
	Put(ctx context.Context, c *vault.Connection) error
	Delete(ctx context.Context, principal, server string) error
	List(ctx context.Context, principal string) ([]vault.Summary, error)
	First(ctx context.Context, server string) (string, error)
	Mark(ctx context.Context, principal, server string, status vault.Status, reason string) error
	Refresh(ctx context.Context, principal, server string, minValid time.Duration, fn vault.RefreshFunc) (*vault.Connection, error)
}

var _ Store = (*vault.Vault)(nil)
