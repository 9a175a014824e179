package audit_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/hints"
)

// benchAuditor measures Start then End of c through an Auditor on SQLite,
// and reports the records dropped per call (a buffered writer that cannot
// keep up drops rather than queues).
func benchAuditor(b *testing.B, c audit.Call) {
	s, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "audit.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a, err := audit.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e, err := a.Start(b.Context(), c)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.End(b.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
			b.Fatal(err)
		}
	}
	if err := a.Close(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(a.Stats().Dropped)/float64(b.N), "dropped/op")
}

// BenchmarkAuditorRead: a read at the summary level, recorded after it
// ends by the batched writer: what auditing adds to a read's latency.
func BenchmarkAuditorRead(b *testing.B) {
	benchAuditor(b, audit.Call{Principal: "alice", Server: "files", Tool: "read_file", Effect: hints.EffectRead,
		Decision: audit.Allow, Arguments: json.RawMessage(`{"path":"notes/today.txt"}`)})
}

// BenchmarkAuditorDelete: a confirmed delete at the full level, written
// durably before it is forwarded and its outcome after.
func BenchmarkAuditorDelete(b *testing.B) {
	benchAuditor(b, audit.Call{Principal: "alice", Server: "files", Tool: "delete_file", Effect: hints.EffectDelete,
		Destructive: true, Decision: audit.Confirm, Approver: "alice", Arguments: json.RawMessage(`{"path":"notes/today.txt"}`)})
}
