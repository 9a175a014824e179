package vault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"golang.org/x/oauth2"
)

// maxRefreshWait bounds a refresh function, well within the lock's
// timeout: a slow authorization server holds the row's lock (on SQLite, the
// vault's one writer) no longer than this.
const maxRefreshWait = 10 * time.Second

// RefreshFunc obtains a new token for c, typically with c.Token's refresh
// token at c.Issuer. A token without a refresh token keeps c's.
type RefreshFunc func(ctx context.Context, c *Connection) (*oauth2.Token, error)

// Refresh returns principal's connection to server with a token valid for
// at least minValid, calling fn for a new one if needed. Callers in this
// process share one refresh of a row (and its outcome); across processes
// the row is locked during the refresh and read again under the lock, so
// fn runs only if no one refreshed the token meanwhile. The lock is held at
// most Options.LockTimeout, fn at most 10 s of it. When fn fails because
// the authorization server rejected the grant (its error wraps
// [ErrRejected]), the row is marked [RefreshFailed] with fn's error as the
// reason; any other failure leaves the row as it was; either way the
// error is returned, and a later Refresh tries again. A [Revoked]
// connection fails with [ErrRevoked], without calling fn.
func (v *Vault) Refresh(ctx context.Context, principal, server string, minValid time.Duration, fn RefreshFunc) (*Connection, error) {
	c, err := v.Get(ctx, principal, server)
	switch {
	case err != nil:
		return nil, err
	case c.Status == Revoked:
		return nil, ErrRevoked
	case v.valid(c, minValid):
		return c, nil
	}
	key := strconv.Itoa(len(principal)) + ":" + principal + server
	// The refresh outlives a caller that gives up: others may share it.
	shared := context.WithoutCancel(ctx)
	ch := v.flight.DoChan(key, func() (any, error) { return v.refresh(shared, principal, server, minValid, fn) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		c := *r.Val.(*Connection)
		return &c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// valid reports whether c's token is valid for at least minValid more.
func (v *Vault) valid(c *Connection, minValid time.Duration) bool {
	return c.Token.AccessToken != "" && (c.Token.Expiry.IsZero() || c.Token.Expiry.After(v.opts.Now().Add(minValid)))
}

// refresh is one refresh of a row, under its lock.
func (v *Vault) refresh(ctx context.Context, principal, server string, minValid time.Duration, fn RefreshFunc) (*Connection, error) {
	ctx, cancel := context.WithTimeout(ctx, v.opts.LockTimeout)
	defer cancel()
	var out *Connection
	var fnErr error
	err := v.inTx(ctx, func(t *sql.Tx) error {
		w, err := scanRow(t.QueryRowContext(ctx, v.db.Rebind(selectRow+v.lock), principal, server))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		c, err := v.connection(w)
		switch {
		case err != nil:
			return err
		case c.Status == Revoked:
			return ErrRevoked
		case v.valid(c, minValid):
			out = c
			return nil
		}
		in := *c
		fctx, fcancel := context.WithTimeout(ctx, min(v.opts.LockTimeout*9/10, maxRefreshWait))
		tok, err := fn(fctx, &in)
		fcancel()
		if err == nil && (tok == nil || tok.AccessToken == "") {
			err = errors.New("the refresh gave no access token")
		}
		now := v.opts.Now().UTC().Truncate(time.Microsecond) // as stored
		if err != nil {
			fnErr = err
			if !errors.Is(err, ErrRejected) {
				return nil // a passing failure: the row stays as it was
			}
			_, err := t.ExecContext(ctx, v.db.Rebind("UPDATE "+Table+" SET status = ?, reason = ?, updated_at = ? WHERE principal = ? AND server = ?"),
				string(RefreshFailed), text.Clip(err.Error(), MaxReasonLen), toMicro(now), principal, server)
			return err
		}
		n := *c
		n.Token = *tok
		if n.Token.RefreshToken == "" {
			n.Token.RefreshToken = c.Token.RefreshToken
		}
		n.Status, n.Reason, n.Updated = Connected, "", now
		nw, err := v.toRow(&n)
		if err != nil {
			return err
		}
		if err := v.update(ctx, t, nw); err != nil {
			return err
		}
		out = &n
		return nil
	})
	switch {
	case fnErr != nil && err != nil:
		return nil, fmt.Errorf("vault: refreshing the token of %q for %q: %w (and marking it failed: %v)", server, principal, fnErr, err)
	case fnErr != nil:
		return nil, fmt.Errorf("vault: refreshing the token of %q for %q: %w", server, principal, fnErr)
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrRevoked), errors.Is(err, ErrCannotOpen):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("vault: refreshing the token of %q for %q: %w", server, principal, err)
	}
	return out, nil
}
