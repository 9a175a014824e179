package config

import (
	"errors"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
)

// Audit is the audit log (package gateway/audit): a record of every
// tools/call. Its zero value, after [Parse], is the default: SQLite at
// [DefaultAuditPath], reads summarised, other effects in full.
type Audit struct {
	// Store is where the records go: sqlite (default), postgres, or off
	// (no audit log).
	Store AuditStore `json:"store"`
	// Path is the SQLite file (store sqlite), relative to the config
	// file's directory; empty means [DefaultAuditPath].
	Path string `json:"path,omitempty"`
	// URL is the PostgreSQL database (store postgres), usually
	// "${PREFLIGHT_POSTGRES_URL}".
	URL string `json:"url,omitempty"`
	// Levels are what is recorded of a call, by its effect.
	Levels AuditLevels `json:"levels"`
	// SensitiveArguments name arguments whose values are never
	// recorded, at any depth (names that look like credentials never
	// are either).
	SensitiveArguments []string `json:"sensitiveArguments,omitempty"`
	// OnUnavailable is what becomes of a call that need not be audited
	// durably (neither confirmed, nor destructive, nor a delete) when the
	// store is unavailable: proceed (default) or fail-closed. Calls that
	// must be audited always fail closed.
	OnUnavailable AuditFailure `json:"onUnavailable"`
}

// AuditLevels are the levels by effect.
type AuditLevels struct {
	Read     AuditLevel `json:"read"`
	Write    AuditLevel `json:"write"`
	External AuditLevel `json:"external"`
	Delete   AuditLevel `json:"delete"`
}

// AuditStore is where audit records are kept.
type AuditStore string

// The audit stores.
const (
	AuditSQLite   AuditStore = "sqlite"   // an SQLite file (default)
	AuditPostgres AuditStore = "postgres" // a PostgreSQL database
	AuditOff      AuditStore = "off"      // no audit log
)

// AuditLevel is how much of a call is recorded.
type AuditLevel string

// The audit levels.
const (
	AuditLevelOff     AuditLevel = "off"     // nothing (calls that must be audited still are, summarised)
	AuditLevelSummary AuditLevel = "summary" // everything but argument values
	AuditLevelFull    AuditLevel = "full"    // argument values too, but sensitive ones
)

// AuditFailure is what becomes of a call when the audit store is
// unavailable.
type AuditFailure string

// The failure policies.
const (
	AuditProceed    AuditFailure = "proceed"
	AuditFailClosed AuditFailure = "fail-closed"
)

// maxSensitiveArguments bounds audit.sensitiveArguments.
const maxSensitiveArguments = 256

// DefaultAuditPath is the SQLite file of a configuration that names none:
// audit.db in preflight under the user's state directory
// ($XDG_STATE_HOME, else ~/.local/state; on Windows %LocalAppData%).
func DefaultAuditPath(env func(string) (string, bool)) (string, error) {
	get := func(k string) string {
		v, _ := env(k)
		return v
	}
	var dir string
	switch {
	case runtime.GOOS == "windows" && get("LocalAppData") != "":
		dir = get("LocalAppData")
	case get("XDG_STATE_HOME") != "" && filepath.IsAbs(get("XDG_STATE_HOME")):
		dir = get("XDG_STATE_HOME")
	case get("HOME") != "":
		dir = filepath.Join(get("HOME"), ".local", "state")
	default:
		return "", errors.New("audit.path: no default location for the audit log (neither XDG_STATE_HOME nor HOME is set): give audit.path")
	}
	return filepath.Join(dir, "preflight", "audit.db"), nil
}

// audit checks the audit section and applies its defaults.
func (p *parser) audit(a *Audit) {
	if a.Store == "" {
		a.Store = AuditSQLite
	}
	switch a.Store {
	case AuditSQLite:
		if a.URL != "" {
			p.fail("audit.url", "is for store postgres; an SQLite audit log is a file: give audit.path")
		}
		a.Path = p.resolve(a.Path)
	case AuditPostgres:
		if a.Path != "" {
			p.fail("audit.path", "is for store sqlite; a PostgreSQL audit log is named by audit.url")
		}
		switch u, err := url.Parse(a.URL); {
		case a.URL == "":
			p.fail("audit.url", "required with store postgres: the database, as postgres://USER@HOST/DATABASE (usually ${PREFLIGHT_POSTGRES_URL})")
		case err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "":
			// The URL is not repeated: it may hold a password.
			p.fail("audit.url", "not a PostgreSQL URL (allowed: postgres://[user[:password]@]host[:port]/database[?sslmode=...], or postgresql://...)")
		}
	case AuditOff:
		if a.Path != "" || a.URL != "" {
			p.fail("audit.store", "is off, yet audit.path or audit.url is set: remove them, or choose sqlite or postgres")
		}
	}
	if a.Levels.Read == "" {
		a.Levels.Read = AuditLevelSummary
	}
	for _, l := range []*AuditLevel{&a.Levels.Write, &a.Levels.External, &a.Levels.Delete} {
		if *l == "" {
			*l = AuditLevelFull
		}
	}
	if a.OnUnavailable == "" {
		a.OnUnavailable = AuditProceed
	}
	if len(a.SensitiveArguments) > maxSensitiveArguments {
		p.fail("audit.sensitiveArguments", "%d names: at most %d", len(a.SensitiveArguments), maxSensitiveArguments)
	}
	for i, n := range a.SensitiveArguments {
		switch {
		case n == "" || len(n) > maxName*2 || hasControl(n):
			p.fail(index("audit.sensitiveArguments", i), "an argument name has 1 to %d bytes, none of them control characters", maxName*2)
		case slices.Index(a.SensitiveArguments, n) < i:
			p.fail(index("audit.sensitiveArguments", i), "%s is also sensitiveArguments[%d]", quote(n), slices.Index(a.SensitiveArguments, n))
		}
	}
	if len(a.SensitiveArguments) == 0 {
		a.SensitiveArguments = nil
	}
}

// StoreSpec returns the store a names as package gateway/internal/audit/sqlstore
// opens it: sqlite:PATH (the default path when a names none) or the
// PostgreSQL URL; "" when the audit log is off.
func (a Audit) StoreSpec(env func(string) (string, bool)) (string, error) {
	switch a.Store {
	case AuditOff:
		return "", nil
	case AuditPostgres:
		return a.URL, nil
	}
	path := a.Path
	if path == "" {
		var err error
		if path, err = DefaultAuditPath(env); err != nil {
			return "", err
		}
	}
	return "sqlite:" + path, nil
}
