package vault

import (
	"context"
	"time"
)

// RefreshUnderLock is the refresh of a row under its lock, without the
// read before it or the sharing within the process: what another replica
// does once it holds the lock.
func (v *Vault) RefreshUnderLock(ctx context.Context, principal, server string, minValid time.Duration, fn RefreshFunc) (*Connection, error) {
	return v.refresh(ctx, principal, server, minValid, fn)
}
