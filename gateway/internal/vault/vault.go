// Package vault keeps the tokens the gateway holds for its principals at
// OAuth-protected upstream servers: one row per principal and server, in
// SQLite (sqlite:PATH, one gateway) or PostgreSQL (postgres://, shared by
// replicas), on package sqldb with its own embedded migrations (versions in
// goose_vault).
//
// Secrets (the token, a client secret from dynamic registration) are sealed
// with AES-256-GCM under the first of the vault's keys and bound to their
// row; every key opens, so keys rotate by adding a new one first and
// running [Vault.Rekey] before the old one goes. What lists connections
// (principal, server, issuer, scopes, expiry, status) stays readable.
//
// [Vault.Refresh] renews a token once across replicas: callers in one
// process share a refresh, and the row is locked while it runs, so another
// replica waits and finds the new token.
package vault

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Table is the table the vault keeps its rows in.
const Table = "preflight_vault"

// Defaults of [Options].
const (
	DefaultMaxPerPrincipal = 256
	DefaultMaxRows         = 100_000
	DefaultLockTimeout     = 30 * time.Second
)

// Bounds of what a row holds.
const (
	// MaxSecretLen is the longest token part or client secret, in bytes.
	MaxSecretLen = 64 << 10
	// MaxTextLen is the longest principal, server, issuer, scopes or
	// client ID, in bytes.
	MaxTextLen = 4 << 10
	// MaxReasonLen is where a status reason is clipped.
	MaxReasonLen = 500
)

// Errors.
var (
	ErrNotFound = errors.New("vault: no such connection")
	// ErrFull reports a new row past Options.MaxPerPrincipal or MaxRows.
	ErrFull = errors.New("vault: full")
	// ErrRejected is wrapped by a refresh function's error when the
	// authorization server rejected the grant (invalid_grant,
	// unauthorized_client): Refresh then marks the connection
	// RefreshFailed. Other errors (a timeout, a 5xx) leave it as it was.
	ErrRejected = errors.New("vault: the authorization server rejected the grant")
	// ErrRevoked reports a refresh of a revoked connection.
	ErrRevoked = errors.New("vault: the connection is revoked")
)

// Status is the state of a connection.
type Status string

// The statuses.
const (
	Connected     Status = "connected"
	RefreshFailed Status = "refresh_failed"
	Revoked       Status = "revoked"
)

func (s Status) valid() bool { return s == Connected || s == RefreshFailed || s == Revoked }

// Connection is a principal's sign-in at an upstream server.
type Connection struct {
	Principal string // "" is the local operator
	Server    string
	Token     oauth2.Token // access token, type, refresh token, expiry
	Scopes    string       // as granted, space-separated
	Issuer    string       // the authorization server
	ClientID  string
	// TokenURL and AuthStyle (an oauth2.AuthStyle) are how the token is
	// refreshed at the authorization server's token endpoint.
	TokenURL  string
	AuthStyle int
	// ClientSecret is set when dynamic registration issued one.
	ClientSecret string
	Status       Status // "" means Connected in Put
	Reason       string // why the status, for people
	Created      time.Time
	Updated      time.Time
}

// Summary is a connection without its secrets, as [Vault.List] returns it.
type Summary struct {
	Principal, Server string
	Scopes, Issuer    string
	ClientID          string
	Expiry            time.Time // zero: the token does not expire
	Status            Status
	Reason            string
	Created, Updated  time.Time
}

// Summary returns c without its secrets.
func (c *Connection) Summary() Summary {
	return Summary{Principal: c.Principal, Server: c.Server, Scopes: c.Scopes, Issuer: c.Issuer, ClientID: c.ClientID,
		Expiry: c.Token.Expiry, Status: c.Status, Reason: c.Reason, Created: c.Created, Updated: c.Updated}
}

// Options configure a [Vault]; nil means the defaults.
type Options struct {
	// MaxPerPrincipal bounds one principal's rows. Zero means
	// [DefaultMaxPerPrincipal].
	MaxPerPrincipal int
	// MaxRows bounds all rows. Zero means [DefaultMaxRows].
	MaxRows int
	// LockTimeout bounds how long [Vault.Refresh] holds a row's lock; the
	// refresh function has nine tenths of it. Zero means
	// [DefaultLockTimeout].
	LockTimeout time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Vault is an open vault, safe for concurrent use. Close it when done.
type Vault struct {
	db     *sqldb.DB
	seal   *sealer
	opts   Options
	lock   string // ends a SELECT that reads a row to change it
	flight singleflight.Group
}

// Open opens the vault in the database named by dsn (sqlite:PATH or
// postgres://...) and migrates its schema. keys[0] seals; every key opens.
func Open(ctx context.Context, dsn string, keys []Key, opts *Options) (*Vault, error) {
	s, err := newSealer(keys)
	if err != nil {
		return nil, err
	}
	v := &Vault{seal: s}
	if opts != nil {
		v.opts = *opts
	}
	if v.opts.MaxPerPrincipal <= 0 {
		v.opts.MaxPerPrincipal = DefaultMaxPerPrincipal
	}
	if v.opts.MaxRows <= 0 {
		v.opts.MaxRows = DefaultMaxRows
	}
	if v.opts.LockTimeout <= 0 {
		v.opts.LockTimeout = DefaultLockTimeout
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	db, err := sqldb.Open(ctx, dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	ms, err := fs.Sub(migrations, "migrations")
	if err == nil {
		err = db.Migrate(ctx, sqldb.Schema{Migrations: ms, Table: "goose_vault"})
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("vault: %w", err)
	}
	v.db = db
	if db.Dialect == sqldb.Postgres {
		v.lock = " FOR UPDATE"
	}
	return v, nil
}

// Close closes the database.
func (v *Vault) Close() error { return v.db.Close() }

// String names the database without credentials.
func (v *Vault) String() string { return v.db.String() }

// Ping reports whether the database answers, within ctx.
func (v *Vault) Ping(ctx context.Context) error { return v.db.Ping(ctx) }

// columns lists the columns in the order rows are read and written.
const columns = "principal, server, issuer, client_id, client_secret, token_url, auth_style, token, key_id, scopes, expiry, status, reason, created_at, updated_at"

// row is a connection as stored.
type row struct {
	principal, server, issuer, clientID string
	tokenURL                            string
	authStyle                           int
	clientSecret, token, keyID          string // sealed, and the sealing key
	scopes                              string
	expiry                              int64 // microseconds since 1970; 0: none
	status, reason                      string
	created, updated                    int64
}

func (w *row) args() []any {
	return []any{w.principal, w.server, w.issuer, w.clientID, w.clientSecret, w.tokenURL, w.authStyle, w.token, w.keyID, w.scopes,
		w.expiry, w.status, w.reason, w.created, w.updated}
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanRow(s scanner) (*row, error) {
	var w row
	err := s.Scan(&w.principal, &w.server, &w.issuer, &w.clientID, &w.clientSecret, &w.tokenURL, &w.authStyle, &w.token, &w.keyID, &w.scopes,
		&w.expiry, &w.status, &w.reason, &w.created, &w.updated)
	return &w, err
}

func fromMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func toMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func (w *row) summary() Summary {
	return Summary{Principal: w.principal, Server: w.server, Scopes: w.scopes, Issuer: w.issuer, ClientID: w.clientID,
		Expiry: fromMicro(w.expiry), Status: Status(w.status), Reason: w.reason,
		Created: fromMicro(w.created), Updated: fromMicro(w.updated)}
}

// sealedToken is what is sealed of a token; its expiry stays readable.
type sealedToken struct {
	Access  string `json:"a"`
	Type    string `json:"t,omitempty"`
	Refresh string `json:"r,omitempty"`
}

const (
	fieldToken  = "token"
	fieldSecret = "client secret"
)

// connection opens w's secrets.
func (v *Vault) connection(w *row) (*Connection, error) {
	s := w.summary()
	c := &Connection{Principal: s.Principal, Server: s.Server, Scopes: s.Scopes, Issuer: s.Issuer, ClientID: s.ClientID,
		TokenURL: w.tokenURL, AuthStyle: w.authStyle, Status: s.Status, Reason: s.Reason, Created: s.Created, Updated: s.Updated}
	b, err := v.seal.open(fieldToken, w.principal, w.server, w.token)
	if err != nil {
		return nil, err
	}
	var t sealedToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("vault: the token of %q for %q: %w", w.server, w.principal, err)
	}
	c.Token = oauth2.Token{AccessToken: t.Access, TokenType: t.Type, RefreshToken: t.Refresh, Expiry: s.Expiry}
	if w.clientSecret != "" {
		b, err := v.seal.open(fieldSecret, w.principal, w.server, w.clientSecret)
		if err != nil {
			return nil, err
		}
		c.ClientSecret = string(b)
	}
	return c, nil
}

// toRow checks c and seals its secrets under the first key.
func (v *Vault) toRow(c *Connection) (*row, error) {
	switch {
	case c.Server == "":
		return nil, errors.New("vault: a connection needs a server")
	case c.Status != "" && !c.Status.valid():
		return nil, fmt.Errorf("vault: status %q: want connected, refresh_failed or revoked", text.Clip(string(c.Status), 40))
	case c.Token.AccessToken == "":
		return nil, errors.New("vault: a connection needs an access token")
	}
	for _, f := range []struct{ name, s string }{{"principal", c.Principal}, {"server", c.Server}, {"issuer", c.Issuer}, {"scopes", c.Scopes}, {"client ID", c.ClientID}, {"token URL", c.TokenURL}, {"token type", c.Token.TokenType}} {
		if len(f.s) > MaxTextLen {
			return nil, fmt.Errorf("vault: the %s has %d bytes, more than %d", f.name, len(f.s), MaxTextLen)
		}
	}
	for _, f := range []struct{ name, s string }{{"access token", c.Token.AccessToken}, {"refresh token", c.Token.RefreshToken}, {"client secret", c.ClientSecret}} {
		if len(f.s) > MaxSecretLen {
			return nil, fmt.Errorf("vault: the %s has %d bytes, more than %d", f.name, len(f.s), MaxSecretLen)
		}
	}
	tok, err := json.Marshal(sealedToken{Access: c.Token.AccessToken, Type: c.Token.TokenType, Refresh: c.Token.RefreshToken})
	if err != nil {
		return nil, err
	}
	status := c.Status
	if status == "" {
		status = Connected
	}
	w := &row{principal: c.Principal, server: c.Server, issuer: c.Issuer, clientID: c.ClientID, tokenURL: c.TokenURL, authStyle: c.AuthStyle,
		token: v.seal.seal(fieldToken, c.Principal, c.Server, tok), keyID: v.seal.sealID, scopes: c.Scopes,
		expiry: toMicro(c.Token.Expiry), status: string(status), reason: text.Clip(c.Reason, MaxReasonLen),
		created: toMicro(c.Created), updated: toMicro(c.Updated)}
	if c.ClientSecret != "" {
		w.clientSecret = v.seal.seal(fieldSecret, c.Principal, c.Server, []byte(c.ClientSecret))
	}
	return w, nil
}

// selectRow is the query of one row by principal and server.
const selectRow = "SELECT " + columns + " FROM " + Table + " WHERE principal = ? AND server = ?"

// Get returns principal's connection to server, its secrets opened.
func (v *Vault) Get(ctx context.Context, principal, server string) (*Connection, error) {
	w, err := scanRow(v.db.Read.QueryRowContext(ctx, v.db.Rebind(selectRow), principal, server))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return v.connection(w)
}

// First returns the principal who connected server first among those
// whose connection is connected (the earliest created), ErrNotFound when
// there is none: a principal who connects later does not displace them.
func (v *Vault) First(ctx context.Context, server string) (string, error) {
	var p string
	err := v.db.Read.QueryRowContext(ctx, v.db.Rebind("SELECT principal FROM "+Table+" WHERE server = ? AND status = ? ORDER BY created_at, principal LIMIT 1"),
		server, string(Connected)).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("vault: %w", err)
	}
	return p, nil
}

// List returns principal's connections, by server, without their secrets.
func (v *Vault) List(ctx context.Context, principal string) ([]Summary, error) {
	rs, err := v.db.Read.QueryContext(ctx, v.db.Rebind("SELECT "+columns+" FROM "+Table+" WHERE principal = ? ORDER BY server"), principal)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	defer rs.Close()
	out := []Summary{}
	for rs.Next() {
		w, err := scanRow(rs)
		if err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
		out = append(out, w.summary())
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return out, nil
}

// inTx runs f in a writing transaction, committed when f succeeds.
func (v *Vault) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	t, err := v.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := f(t); err != nil {
		return err
	}
	return t.Commit()
}

// capLock serialises, on PostgreSQL, the transactions that add rows, so
// that two cannot both pass a cap (SQLite's writers are serial anyway).
const capLock = 0x7661756c74 // "vault"

// Put stores c, replacing principal's connection to the server if there is
// one (its Created time is kept). Updated is set to now, and Created too
// for a new row; a new row past a cap fails with [ErrFull].
func (v *Vault) Put(ctx context.Context, c *Connection) error {
	now := v.opts.Now().UTC()
	in := *c
	in.Updated = now
	w, err := v.toRow(&in)
	if err != nil {
		return err
	}
	err = v.inTx(ctx, func(t *sql.Tx) error {
		var created int64
		err := t.QueryRowContext(ctx, v.db.Rebind("SELECT created_at FROM "+Table+" WHERE principal = ? AND server = ?"+v.lock), c.Principal, c.Server).Scan(&created)
		switch {
		case err == nil:
			w.created = created
			return v.update(ctx, t, w)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := v.checkCaps(ctx, t, c.Principal); err != nil {
			return err
		}
		w.created = toMicro(now)
		// Another replica may have added the row since it was looked for.
		_, err = t.ExecContext(ctx, v.db.Rebind("INSERT INTO "+Table+" ("+columns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"+
			" ON CONFLICT (principal, server) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id, client_secret = excluded.client_secret,"+
			" token_url = excluded.token_url, auth_style = excluded.auth_style,"+
			" token = excluded.token, key_id = excluded.key_id, scopes = excluded.scopes, expiry = excluded.expiry, status = excluded.status,"+
			" reason = excluded.reason, updated_at = excluded.updated_at"), w.args()...)
		return err
	})
	if err != nil && !errors.Is(err, ErrFull) {
		return fmt.Errorf("vault: %w", err)
	}
	return err
}

// update writes w over its row, all but the creation time.
func (v *Vault) update(ctx context.Context, t *sql.Tx, w *row) error {
	_, err := t.ExecContext(ctx, v.db.Rebind("UPDATE "+Table+" SET issuer = ?, client_id = ?, client_secret = ?, token_url = ?, auth_style = ?, token = ?, key_id = ?, scopes = ?, expiry = ?, status = ?, reason = ?, updated_at = ? WHERE principal = ? AND server = ?"),
		w.issuer, w.clientID, w.clientSecret, w.tokenURL, w.authStyle, w.token, w.keyID, w.scopes, w.expiry, w.status, w.reason, w.updated, w.principal, w.server)
	return err
}

// checkCaps fails with ErrFull when principal, or the vault, has no room
// for a new row.
func (v *Vault) checkCaps(ctx context.Context, t *sql.Tx, principal string) error {
	if v.db.Dialect == sqldb.Postgres {
		if _, err := t.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", capLock); err != nil {
			return err
		}
	}
	var mine, all int
	err := t.QueryRowContext(ctx, v.db.Rebind("SELECT count(*) FILTER (WHERE principal = ?), count(*) FROM "+Table), principal).Scan(&mine, &all)
	switch {
	case err != nil:
		return err
	case mine >= v.opts.MaxPerPrincipal:
		return fmt.Errorf("%w: principal %q has %d connections, the most allowed (MaxPerPrincipal)", ErrFull, text.Clip(principal, 100), mine)
	case all >= v.opts.MaxRows:
		return fmt.Errorf("%w: the vault holds %d connections, the most allowed (MaxRows)", ErrFull, all)
	}
	return nil
}

// Delete removes principal's connection to server.
func (v *Vault) Delete(ctx context.Context, principal, server string) error {
	res, err := v.db.Write.ExecContext(ctx, v.db.Rebind("DELETE FROM "+Table+" WHERE principal = ? AND server = ?"), principal, server)
	return v.changed(res, err)
}

// Mark sets the status of principal's connection to server, with a reason
// for people (clipped to [MaxReasonLen] bytes).
func (v *Vault) Mark(ctx context.Context, principal, server string, status Status, reason string) error {
	if !status.valid() {
		return fmt.Errorf("vault: status %q: want connected, refresh_failed or revoked", text.Clip(string(status), 40))
	}
	res, err := v.db.Write.ExecContext(ctx, v.db.Rebind("UPDATE "+Table+" SET status = ?, reason = ?, updated_at = ? WHERE principal = ? AND server = ?"),
		string(status), text.Clip(reason, MaxReasonLen), toMicro(v.opts.Now()), principal, server)
	return v.changed(res, err)
}

// changed returns ErrNotFound when a statement changed no row.
func (v *Vault) changed(res sql.Result, err error) error {
	if err != nil {
		return fmt.Errorf("vault: %w", err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return fmt.Errorf("vault: %w", err)
	case n == 0:
		return ErrNotFound
	}
	return nil
}
