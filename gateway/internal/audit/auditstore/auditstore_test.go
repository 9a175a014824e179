package auditstore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/auditstore"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestOpen: each kind of URL opens its store, which works; others are
// refused with what to write.
func TestOpen(t *testing.T) {
	for _, spec := range []string{"sqlite:" + filepath.Join(t.TempDir(), "audit.db"), pgtest.NewDatabase(t)} {
		s, err := auditstore.Open(t.Context(), spec, nil)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if _, err := s.Begin(t.Context(), &audit.Record{Server: "s", Tool: "t", Decision: audit.Allow}); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
		s.Close()
		ro, err := auditstore.Open(t.Context(), spec, &auditstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s read-only: %v", spec, err)
		}
		n := 0
		for _, err := range ro.Query(t.Context(), audit.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		ro.Close()
		if n != 1 {
			t.Errorf("%s: %d records, want 1", spec, n)
		}
	}
	for spec, want := range map[string]string{
		"":                             "want sqlite:PATH or postgres://",
		"audit.db":                     "want sqlite:PATH or postgres://",
		"mysql://u:hunter2@h/db":       `"mysql://u:xxxxx@h/db"`,
		"sqlite://audit.db":            "write sqlite:PATH, a file path",
		"host=h password=hunter2":      `"host=h password=xxxxx"`,
		"sqlite:" + t.TempDir() + "/?": "want a file path without ?",
	} {
		_, err := auditstore.Open(t.Context(), spec, nil)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): %v, want an error containing %q and no password", spec, err, want)
		}
	}
	if _, err := auditstore.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "none.db"), &auditstore.Options{ReadOnly: true}); err == nil {
		t.Error("opened a missing SQLite file read-only")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                         "postgres://u@h/db",
		"postgres://h/db?password=pw&x=1":           "postgres://h/db?password=xxxxx&x=1",
		"sqlite:/var/lib/a.db":                      "sqlite:/var/lib/a.db",
	} {
		if got := auditstore.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
