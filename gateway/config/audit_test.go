package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestAuditAndRedaction checks that the sections read what they say:
// a relative SQLite path is the config file's, a postgres URL is kept,
// levels and kinds are taken as written.
func TestAuditAndRedaction(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "/etc/preflight/gateway.yaml", `
servers: {s: {command: x}}
audit:
  path: logs/audit.db
  levels: {read: off, delete: full}
  sensitiveArguments: [ssn]
  onUnavailable: fail-closed
redaction:
  level: internal
  withhold: off
  kinds: [secrets, ipv4]
  phoneRegion: DE
`)
	want := Audit{Store: AuditSQLite, Path: filepath.FromSlash("/etc/preflight/logs/audit.db"), OnUnavailable: AuditFailClosed,
		Levels:             AuditLevels{Read: AuditLevelOff, Write: AuditLevelFull, External: AuditLevelFull, Delete: AuditLevelFull},
		SensitiveArguments: []string{"ssn"}}
	if !reflect.DeepEqual(c.Audit, want) {
		t.Errorf("audit = %+v\nwant %+v", c.Audit, want)
	}
	wantR := Redaction{Level: "internal", Withhold: RedactionOff, Sensitive: "confidential", Kinds: []RedactionKind{"secrets", "ipv4"}, PhoneRegion: "DE"}
	if !reflect.DeepEqual(c.Redaction, wantR) {
		t.Errorf("redaction = %+v\nwant %+v", c.Redaction, wantR)
	}

	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\naudit: {store: postgres, url: 'postgres://preflight@db/preflight?sslmode=require'}\n")
	if c.Audit.Store != AuditPostgres || c.Audit.URL != "postgres://preflight@db/preflight?sslmode=require" || c.Audit.Path != "" {
		t.Errorf("postgres audit = %+v", c.Audit)
	}
	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\naudit: {store: 'off'}\n")
	if c.Audit.Store != AuditOff {
		t.Errorf("audit off = %+v", c.Audit)
	}
}

// TestDefaultAuditPath checks where a configuration without audit.path
// keeps its audit log.
func TestDefaultAuditPath(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/home/a"}, "/home/a/.local/state/preflight/audit.db"},
		{map[string]string{"HOME": "/home/a", "XDG_STATE_HOME": "/var/state"}, "/var/state/preflight/audit.db"},
		{map[string]string{"HOME": "/home/a", "XDG_STATE_HOME": "relative"}, "/home/a/.local/state/preflight/audit.db"},
	} {
		got, err := DefaultAuditPath(env(tc.env))
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("%v: %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
	if _, err := DefaultAuditPath(env(nil)); err == nil {
		t.Error("no HOME: no error")
	}
}
