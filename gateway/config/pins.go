package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultPinsFile is the name of the default SQLite pin store, in
// [DefaultStateDir].
const DefaultPinsFile = "pins.db"

// Pins is where the gateway keeps the tool definitions it pinned (see
// package gateway/pin): one SQLite file, or a PostgreSQL database that
// replicas share. A file without a pins section keeps them in
// [DefaultPinsFile] under [DefaultStateDir].
type Pins struct {
	// Store is the kind of store; default [PinStoreSQLite].
	Store PinStore `json:"store"`
	// Path is the SQLite file (sqlite only), relative to the config
	// file's directory. Empty means [DefaultPinsFile] in
	// [DefaultStateDir], which [Pins.Spec] resolves.
	Path string `json:"path,omitempty"`
	// URL is the PostgreSQL database (postgres only):
	// postgres://user[:password]@host[:port]/database[?sslmode=...].
	URL string `json:"url,omitempty"`
}

// PinStore is a kind of pin store.
type PinStore string

// The pin stores.
const (
	PinStoreSQLite   PinStore = "sqlite"   // one file, shared on one machine (default)
	PinStorePostgres PinStore = "postgres" // a database, shared by replicas
)

// Spec returns the store as package gateway/pin/sqlstore opens it
// (sqlstore.Open): sqlite:PATH, with the default file when Path is empty,
// or the PostgreSQL URL.
func (p Pins) Spec() (string, error) {
	if p.Store == PinStorePostgres {
		if p.URL == "" {
			return "", errors.New("pins.url: required for the postgres store")
		}
		return p.URL, nil
	}
	path := p.Path
	if path == "" {
		dir, err := DefaultStateDir()
		if err != nil {
			return "", fmt.Errorf("pins.path: %w; set pins.path", err)
		}
		path = filepath.Join(dir, DefaultPinsFile)
	}
	return "sqlite:" + path, nil
}

// DefaultStateDir is the directory of the gateway's own state (the default
// pin store) when a config file says nothing: preflight under
// $XDG_STATE_HOME, else ~/.local/state/preflight; on macOS
// ~/Library/Application Support/preflight; on Windows
// %LocalAppData%\preflight. It is not a cache: what it holds (the
// approved definitions) must survive a cleanup.
func DefaultStateDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "preflight"), nil
		}
		return "", errors.New("no state directory for the gateway: %LocalAppData% is not set")
	case "darwin", "ios":
		dir, err := os.UserConfigDir() // ~/Library/Application Support
		if err != nil {
			return "", errors.New("no state directory for the gateway: $HOME is not set")
		}
		return filepath.Join(dir, "preflight"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "preflight"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no state directory for the gateway: neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(home, ".local", "state", "preflight"), nil
}

// StateDirOf is the state directory of the gateway serving the
// configuration file named file: gateways/NAME-HASH under
// [DefaultStateDir], NAME the file's base name and HASH a digest of its
// absolute path. It keeps what belongs to that gateway alone (its pending
// approvals, the key of its login links, its page's address).
func StateDirOf(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	dir, err := DefaultStateDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, filepath.Base(abs))
	return filepath.Join(dir, "gateways", name+"-"+hex.EncodeToString(sum[:6])), nil
}

// pins checks the pins section and applies its defaults.
func (p *parser) pins(c *Pins) {
	if c.Store == "" {
		c.Store = PinStoreSQLite
	}
	switch c.Store {
	case PinStoreSQLite:
		if c.URL != "" {
			p.fail("pins.url", "is for the postgres store; the sqlite store keeps its pins in pins.path")
		}
		switch {
		case p.dec.set("pins.path") && c.Path == "":
			p.fail("pins.path", "empty: name the SQLite file, or leave pins.path out for the default (%s in the user's state directory)", DefaultPinsFile)
		case hasControl(c.Path):
			p.fail("pins.path", "a path holds no control characters")
		default:
			c.Path = p.resolve(c.Path)
		}
	case PinStorePostgres:
		if c.Path != "" {
			p.fail("pins.path", "is for the sqlite store; the postgres store is the database in pins.url")
		}
		if c.URL == "" {
			p.fail("pins.url", "required: the PostgreSQL database, as postgres://user@host:5432/database")
			return
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			// The URL is not repeated: it may hold a password.
			p.fail("pins.url", "not a PostgreSQL URL (allowed: postgres://user[:password]@host[:port]/database[?sslmode=...])")
		}
	}
}
