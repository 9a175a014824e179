package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/preflightmcp/preflight/requeststate"
)

// ServerAuth is how the gateway authenticates to an http or sse server
// besides its headers.
type ServerAuth string

// The ways to authenticate to a server.
const (
	// ServerAuthNone: the headers and bearerTokenEnv only (default).
	ServerAuthNone ServerAuth = ""
	// ServerAuthOAuth: the gateway signs in with OAuth 2.1 for each
	// principal (or once, shared), as the server's authorization server
	// allows; see [ServerOAuth].
	ServerAuthOAuth ServerAuth = "oauth"
)

// ServerOAuth configures the OAuth sign-in to one server. Everything is
// discovered from the server when left out: its authorization server, and
// how the gateway registers (a client ID metadata document, else dynamic
// registration).
type ServerOAuth struct {
	// Shared makes one connection, made by an admin on the page, serve
	// every principal (a service account). Default: each principal
	// connects their own account.
	Shared bool `json:"shared,omitempty"`
	// ClientID is a client registered with the authorization server
	// beforehand; ClientSecretEnv names the environment variable holding
	// its secret (none for a public client).
	ClientID        string `json:"clientId,omitempty"`
	ClientSecretEnv string `json:"clientSecretEnv,omitempty"`
	// ClientSecret is the value of ClientSecretEnv. It is never written
	// out.
	ClientSecret string `json:"-"`
	// Issuer binds ClientID to its authorization server: sign-in fails
	// when the server names another.
	Issuer string `json:"issuer,omitempty"`
	// Scopes are asked for besides those the server asks for.
	Scopes []string `json:"scopes,omitempty" config:"text"`
	// ClientMetadataURL is the client ID metadata document (an https URL
	// with a path) the gateway names itself by where the authorization
	// server takes them. Default: the page's own, at
	// approvals.pageUrl + /connections/client.json, when that is https.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
}

// DefaultVaultFile is the name of the default SQLite token vault, in
// [DefaultStateDir].
const DefaultVaultFile = "vault.db"

// DefaultVaultKeyFile is the key the gateway makes for its vault when
// vault names no keys, in [DefaultStateDir].
const DefaultVaultKeyFile = "vault.key"

// Vault is where the tokens of servers with auth: oauth are kept, sealed
// with AES-GCM under Keys: one SQLite file, or a PostgreSQL database that
// replicas share (replicas must then share keys too).
type Vault struct {
	// Store is the kind of store; default sqlite.
	Store PinStore `json:"store"`
	// Path is the SQLite file (sqlite only), relative to the config
	// file's directory. Empty means [DefaultVaultFile] in the state
	// directory.
	Path string `json:"path,omitempty"`
	// URL is the PostgreSQL database (postgres only).
	URL string `json:"url,omitempty"`
	// KeysEnv or KeysFile name the keys, in requestState's syntax: the
	// sealing key first, older ones after it until `preflight vault
	// rekey` has run. Neither means a key the gateway makes and keeps in
	// [DefaultVaultKeyFile] beside the vault (one gateway only).
	KeysEnv  string `json:"keysEnv,omitempty"`
	KeysFile string `json:"keysFile,omitempty"`
	// Keys are the keys read. Never written out.
	Keys []requeststate.Key `json:"-"`
}

// Spec returns the store as package vault opens it: sqlite:PATH (the
// default file in the state directory when Path is empty) or the
// PostgreSQL URL.
func (v Vault) Spec() (string, error) {
	if v.Store == PinStorePostgres {
		if v.URL == "" {
			return "", errors.New("vault.url: required for the postgres store")
		}
		return v.URL, nil
	}
	path := v.Path
	if path == "" {
		dir, err := DefaultStateDir()
		if err != nil {
			return "", fmt.Errorf("vault.path: %w; set vault.path", err)
		}
		path = filepath.Join(dir, DefaultVaultFile)
	}
	return "sqlite:" + path, nil
}

// signIn checks a server's auth and oauth keys.
func (p *parser) signIn(at func(string) string, s *Server) {
	switch s.Auth {
	case ServerAuthNone:
		if p.dec.set(at("oauth")) {
			p.fail(at("oauth"), "set auth: oauth to sign in with OAuth, or leave oauth out")
		}
		return
	case ServerAuthOAuth:
	default:
		p.fail(at("auth"), "%s is not a way to authenticate: want oauth, or leave auth out", quote(string(s.Auth)))
		return
	}
	if s.Type == TransportStdio {
		p.fail(at("auth"), "oauth is for http and sse servers")
		return
	}
	if s.BearerTokenEnv != "" {
		p.fail(at("bearerTokenEnv"), "auth: oauth signs in instead: keep one")
	}
	for h := range s.Headers {
		if strings.EqualFold(h, "authorization") {
			p.fail(join(at("headers"), h), "auth: oauth sets it: keep one")
		}
	}
	o := &s.OAuth
	if o.ClientSecretEnv != "" {
		switch v, ok := p.env(o.ClientSecretEnv); {
		case o.ClientID == "":
			p.fail(at("oauth.clientSecretEnv"), "a secret needs its oauth.clientId")
		case !validEnvName(o.ClientSecretEnv):
			p.fail(at("oauth.clientSecretEnv"), "%s is not a variable name (letters, digits and _, not starting with a digit)", quote(o.ClientSecretEnv))
		case !ok || v == "":
			p.fail(at("oauth.clientSecretEnv"), "environment variable %s is not set", o.ClientSecretEnv)
		case strings.ContainsFunc(v, unicode.IsControl):
			p.fail(at("oauth.clientSecretEnv"), "environment variable %s holds a control character", o.ClientSecretEnv)
		default:
			o.ClientSecret = v
		}
	}
	if hasControl(o.ClientID) {
		p.fail(at("oauth.clientId"), "holds a control character")
	}
	if o.Issuer != "" {
		if u, err := url.Parse(o.Issuer); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			p.fail(at("oauth.issuer"), "not an http:// or https:// URL with a host")
		}
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			p.fail(at("oauth.clientMetadataUrl"), "not an https:// URL with a path (a client ID metadata document)")
		}
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			p.fail(index(at("oauth.scopes"), i), "%s is not a scope (printable ASCII without spaces, quotes or backslashes)", quote(sc))
		}
	}
}

// vault checks the vault section and applies its defaults.
func (p *parser) vault(v *Vault) {
	if v.Store == "" {
		v.Store = PinStoreSQLite
	}
	switch v.Store {
	case PinStoreSQLite:
		if v.URL != "" {
			p.fail("vault.url", "is for the postgres store; the sqlite store is the file in vault.path")
		}
		if hasControl(v.Path) {
			p.fail("vault.path", "a path holds no control characters")
		}
		v.Path = p.resolve(v.Path)
	case PinStorePostgres:
		if v.Path != "" {
			p.fail("vault.path", "is for the sqlite store; the postgres store is the database in vault.url")
		}
		if u, err := url.Parse(v.URL); v.URL == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			p.fail("vault.url", "required for the postgres store: a PostgreSQL URL such as postgres://user@host:5432/database")
		}
		if v.KeysEnv == "" && v.KeysFile == "" {
			p.fail("vault", "replicas sharing a PostgreSQL vault must share its keys: set vault.keysEnv or vault.keysFile")
		}
	}
	switch {
	case v.KeysEnv != "" && v.KeysFile != "":
		p.fail("vault", "sets both keysEnv and keysFile: keep one")
	case v.KeysEnv != "" || v.KeysFile != "":
		v.KeysFile = p.resolve(v.KeysFile)
		v.Keys = p.readKeys("vault", v.KeysEnv, v.KeysFile)
	}
}
