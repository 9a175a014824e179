package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"
)

// Defaults and bounds of the approvals section.
const (
	DefaultApprovalTTL       = 10 * time.Minute
	DefaultApprovalUseWindow = 5 * time.Minute
	MaxApprovalTTL           = 24 * time.Hour
	MaxAdmins                = 100
)

// ApprovalStore is where approval requests are kept.
type ApprovalStore string

// The approval stores.
const (
	// ApprovalsMemory: in this process, lost when it stops.
	ApprovalsMemory ApprovalStore = "memory"
	// ApprovalsSQLite: an SQLite file, for one machine (default), so
	// that calls waiting for a person survive a restart.
	ApprovalsSQLite ApprovalStore = "sqlite"
	// ApprovalsPostgres: PostgreSQL, shared by every replica.
	ApprovalsPostgres ApprovalStore = "postgres"
)

// Approvals configures the calls that wait for a person's approval out of
// band (package gateway/approval). Its zero value means the file has no
// approvals section.
type Approvals struct {
	// Store keeps pending and given approvals. Default [ApprovalsSQLite].
	Store ApprovalStore `json:"store"`
	// Path is the SQLite file of the sqlite store, relative to the config
	// file's directory. Empty means [DefaultApprovalsFile] in the file's
	// own state directory ([StateDirOf]), which [Approvals.SQLitePath]
	// resolves.
	Path string `json:"path,omitempty"`
	// URL is the PostgreSQL database of the postgres store,
	// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...];
	// usually ${PREFLIGHT_POSTGRES_URL}.
	URL string `json:"url,omitempty"`
	// TTL is how long a request waits for a decision. Default
	// [DefaultApprovalTTL].
	TTL Duration `json:"ttl"`
	// UseWindow is how long an approval waits for the call it allows.
	// Default [DefaultApprovalUseWindow].
	UseWindow Duration `json:"useWindow"`
	// Admins are the principals who may decide anyone's requests; others
	// decide only their own.
	Admins []string `json:"admins,omitempty"`
	// PageURL is the approval page's root as people reach it, such as
	// https://mcp.example.com/ui: the links clients are given start with
	// it, and the page answers its host besides the listen address's.
	// Required with Redis.URL: replicas share Redis and a load balancer.
	PageURL string `json:"pageUrl,omitempty"`

	file string // the configuration file's name
}

// DefaultApprovalsFile is the name of the default SQLite approval store,
// in [DefaultStateDir].
const DefaultApprovalsFile = "approvals.db"

// SQLitePath returns the file of the sqlite store: Path, else the default
// file in the configuration file's state directory. Each configuration
// has its own: an approval given for one gateway's call never releases
// another's.
func (a Approvals) SQLitePath() (string, error) {
	if a.Path != "" {
		return a.Path, nil
	}
	dir, err := StateDirOf(a.file)
	if err != nil {
		return "", fmt.Errorf("approvals.path: %w", err)
	}
	return filepath.Join(dir, DefaultApprovalsFile), nil
}

// IsZero reports whether a is the zero value (no approvals section).
func (a Approvals) IsZero() bool {
	return a.Store == "" && a.Path == "" && a.URL == "" && a.TTL == 0 && a.UseWindow == 0 && len(a.Admins) == 0 && a.PageURL == ""
}

// approvals checks the approvals section and applies its defaults.
func (p *parser) approvals(a *Approvals) {
	const at = "approvals."
	a.file = p.file
	if a.Store == "" {
		a.Store = ApprovalsSQLite
	}
	switch a.Store {
	case ApprovalsMemory:
		for _, f := range []struct{ key, v string }{{"path", a.Path}, {"url", a.URL}} {
			if f.v != "" {
				p.fail(at+f.key, "not used by the memory store (path is for sqlite, url for postgres)")
			}
		}
	case ApprovalsSQLite:
		if a.URL != "" {
			p.fail(at+"url", "not used by the sqlite store, which keeps its file at path")
		}
		switch {
		case p.dec.set(at+"path") && a.Path == "":
			p.fail(at+"path", "empty: name the SQLite file, or leave approvals.path out for the default (%s in the user's state directory)", DefaultApprovalsFile)
		case hasControl(a.Path):
			p.fail(at+"path", "a path holds no control characters")
		default:
			a.Path = p.resolve(a.Path)
		}
	case ApprovalsPostgres:
		if a.Path != "" {
			p.fail(at+"path", "not used by the postgres store, which is at url")
		}
		if a.URL == "" {
			p.fail(at+"url", "required by the postgres store: postgres://USER@HOST[:PORT]/DATABASE, usually ${PREFLIGHT_POSTGRES_URL}")
		} else if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			// The URL is not repeated: it may hold a password.
			p.fail(at+"url", "not a PostgreSQL URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...])")
		}
	}
	if a.TTL == 0 {
		a.TTL = Duration(DefaultApprovalTTL)
	} else if time.Duration(a.TTL) > MaxApprovalTTL {
		p.fail(at+"ttl", "%s is more than %s", a.TTL, Duration(MaxApprovalTTL))
	}
	if a.UseWindow == 0 {
		a.UseWindow = Duration(DefaultApprovalUseWindow)
	} else if time.Duration(a.UseWindow) > MaxApprovalTTL {
		p.fail(at+"useWindow", "%s is more than %s", a.UseWindow, Duration(MaxApprovalTTL))
	}
	if a.PageURL != "" {
		if u, err := url.Parse(a.PageURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			p.fail(at+"pageUrl", "want an absolute http or https URL without query, such as https://mcp.example.com/ui")
		}
	}
	if len(a.Admins) > MaxAdmins {
		p.fail(at+"admins", "%d admins: at most %d", len(a.Admins), MaxAdmins)
	}
	for i, name := range a.Admins {
		switch {
		case name == "" || utf8.RuneCountInString(name) > MaxPrincipalLen || hasControl(name):
			p.fail(index(at+"admins", i), "a principal has 1 to %d characters, none of them control characters", MaxPrincipalLen)
		case slices.Index(a.Admins, name) < i:
			p.fail(index(at+"admins", i), "%s is also admins[%d]", quote(name), slices.Index(a.Admins, name))
		}
	}
}
