// Package sqlq holds what the SQL stores of package audit share: the
// query of a filter and the versioned migrations read from embedded files.
package sqlq

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
)

// Dialect is how a store writes placeholders and times.
type Dialect struct {
	// Placeholder returns the placeholder of the n-th argument (from 1).
	Placeholder func(n int) string
	// Time is the column of the start time, TimeArg its argument.
	Time    string
	TimeArg func(time.Time) any
}

// Where returns the WHERE, ORDER BY and LIMIT clauses of f (WHERE omitted
// when f selects everything) and their arguments.
func Where(d Dialect, f audit.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, strings.ReplaceAll(cond, "?", d.Placeholder(len(args))))
	}
	if !f.Since.IsZero() {
		add(d.Time+" >= ?", d.TimeArg(f.Since))
	}
	if !f.Until.IsZero() {
		add(d.Time+" < ?", d.TimeArg(f.Until))
	}
	for _, c := range []struct{ col, v string }{
		{"principal", f.Principal}, {"server", f.Server}, {"tool", f.Tool},
		{"effect", string(f.Effect)}, {"decision", string(f.Decision)},
	} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	switch {
	case f.Outcome == audit.OutcomeUnknown:
		add("(outcome IS NULL OR outcome = ?)", string(f.Outcome))
	case f.Outcome != "":
		add("outcome = ?", string(f.Outcome))
	}
	var b strings.Builder
	if len(conds) > 0 {
		b.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
	if f.Newest {
		b.WriteString(" ORDER BY " + d.Time + " DESC, id DESC")
	} else {
		b.WriteString(" ORDER BY " + d.Time + ", id")
	}
	if f.Limit > 0 {
		b.WriteString(" LIMIT " + strconv.Itoa(f.Limit))
	}
	return b.String(), args
}

// Migration is one step of a schema, numbered from 1.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the files NNN_name.sql of dir in fsys, in order, and
// checks that their versions run 1, 2, 3... without a gap.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %s: want NNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %d_%s: want version %d", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// NewerError reports a database whose schema is newer than this program
// knows.
type NewerError struct{ Have, Know int }

func (e *NewerError) Error() string {
	return fmt.Sprintf("the audit database has schema version %d, newer than this program's %d: upgrade preflight", e.Have, e.Know)
}
