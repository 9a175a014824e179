// Package auditstore opens the audit store a URL names: sqlite:PATH for an
// SQLite file (package sqlitestore), postgres:// or postgresql:// for a
// PostgreSQL database (package pgstore).
package auditstore

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/pgstore"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlitestore"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Options configure Open; nil means the defaults.
type Options struct {
	// ReadOnly opens an existing store to query it: nothing is created or
	// migrated, and a missing SQLite file is an error.
	ReadOnly bool
}

// Open opens the store named by spec:
//
//	sqlite:PATH                   an SQLite file (created if missing)
//	postgres://USER@HOST/DB?...   a PostgreSQL database (also postgresql://)
func Open(ctx context.Context, spec string, o *Options) (audit.Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if strings.HasPrefix(path, "//") {
			return nil, fmt.Errorf("audit store %q: write sqlite:PATH, a file path (sqlite:audit.db, sqlite:/var/lib/preflight/audit.db)", spec)
		}
		return sqlitestore.Open(ctx, path, &sqlitestore.Options{ReadOnly: opts.ReadOnly})
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return pgstore.Open(ctx, spec, &pgstore.Options{ReadOnly: opts.ReadOnly})
	}
	return nil, fmt.Errorf("audit store %q: want sqlite:PATH or postgres://USER@HOST/DATABASE", Redact(spec))
}

// password matches a password given as a parameter.
var password = regexp.MustCompile(`(?i)(password=)[^&\s]*`)

// Redact returns spec with its password hidden, for messages.
func Redact(spec string) string {
	spec = password.ReplaceAllString(spec, "${1}xxxxx")
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return text.Clip(spec, 200)
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok || strings.ContainsAny(userinfo, "/?#") {
		return text.Clip(spec, 200)
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return text.Clip(scheme+"://"+user+":xxxxx@"+host, 200)
	}
	return text.Clip(spec, 200)
}
