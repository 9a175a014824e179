package vault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// rekeyBatch is how many rows Rekey reads at a time.
const rekeyBatch = 100

// Rekey seals again under the first key every row sealed by another, each
// in a transaction of its own, and returns how many it changed. It stops at
// the first row it cannot open ([ErrCannotOpen]).
func (v *Vault) Rekey(ctx context.Context) (n int, err error) {
	for {
		keys, err := v.staleRows(ctx)
		if err != nil || len(keys) == 0 {
			return n, err
		}
		for _, k := range keys {
			changed, err := v.rekeyRow(ctx, k[0], k[1])
			if err != nil {
				return n, err
			}
			if changed {
				n++
			}
		}
	}
}

// staleRows returns the principal and server of up to rekeyBatch rows not
// sealed by the first key.
func (v *Vault) staleRows(ctx context.Context) ([][2]string, error) {
	rs, err := v.db.Read.QueryContext(ctx, v.db.Rebind("SELECT principal, server FROM "+Table+" WHERE key_id <> ? ORDER BY principal, server LIMIT ?"), v.seal.sealID, rekeyBatch)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	defer rs.Close()
	var out [][2]string
	for rs.Next() {
		var k [2]string
		if err := rs.Scan(&k[0], &k[1]); err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
		out = append(out, k)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return out, nil
}

// rekeyRow seals one row again under the first key unless it is already,
// or gone.
func (v *Vault) rekeyRow(ctx context.Context, principal, server string) (changed bool, err error) {
	err = v.inTx(ctx, func(t *sql.Tx) error {
		w, err := scanRow(t.QueryRowContext(ctx, v.db.Rebind(selectRow+v.lock), principal, server))
		if errors.Is(err, sql.ErrNoRows) || err == nil && w.keyID == v.seal.sealID {
			return nil
		}
		if err != nil {
			return err
		}
		c, err := v.connection(w)
		if err != nil {
			return err
		}
		nw, err := v.toRow(c)
		if err != nil {
			return err
		}
		changed = true
		return v.update(ctx, t, nw)
	})
	if err != nil && !errors.Is(err, ErrCannotOpen) {
		return false, fmt.Errorf("vault: %w", err)
	}
	return changed && err == nil, err
}

// SealingKey is the ID of the key that seals: the first of those given.
func (v *Vault) SealingKey() string { return v.seal.sealID }
