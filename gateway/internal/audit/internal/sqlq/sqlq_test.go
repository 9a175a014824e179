package sqlq

import (
	"slices"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/hints"
)

var pg = Dialect{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }, Time: "time", TimeArg: func(t time.Time) any { return t }}

func TestWhere(t *testing.T) {
	since := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		f    audit.Filter
		sql  string
		args []any
	}{
		{audit.Filter{}, " ORDER BY time, id", nil},
		{audit.Filter{Since: since, Principal: "alice", Effect: hints.EffectDelete, Outcome: audit.OutcomeUnknown, Limit: 5, Newest: true},
			" WHERE time >= $1 AND principal = $2 AND effect = $3 AND (outcome IS NULL OR outcome = $4) ORDER BY time DESC, id DESC LIMIT 5",
			[]any{since, "alice", "delete", "unknown"}},
		{audit.Filter{Until: since, Server: "s", Tool: "t", Decision: audit.Confirm, Outcome: audit.OutcomeOK},
			" WHERE time < $1 AND server = $2 AND tool = $3 AND decision = $4 AND outcome = $5 ORDER BY time, id",
			[]any{since, "s", "t", "confirm", "ok"}},
	} {
		sql, args := Where(pg, tc.f)
		if sql != tc.sql || !slices.Equal(args, tc.args) {
			t.Errorf("%+v:\n got %q %v\nwant %q %v", tc.f, sql, args, tc.sql, tc.args)
		}
	}
}

func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{
		"m/002_more.sql":    {Data: []byte("B")},
		"m/001_records.sql": {Data: []byte("A")},
	}, "m")
	if err != nil || len(ms) != 2 || ms[0].Version != 1 || ms[0].Name != "records" || ms[1].SQL != "B" {
		t.Fatalf("%+v, %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":     {"m/001_a.sql": {}, "m/003_c.sql": {}},
		"bad":     {"m/first.sql": {}},
		"not sql": {"m/001_a.txt": {}},
		"twice":   {"m/001_a.sql": {}, "m/1_b.sql": {}},
	} {
		if _, err := Migrations(fsys, "m"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
