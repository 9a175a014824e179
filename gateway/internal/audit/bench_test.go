package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// countingStore counts the transactions of batched writes.
type countingStore struct {
	audit.Store
	writes atomic.Int64
}

func (s *countingStore) Write(ctx context.Context, rs []*audit.Record) error {
	s.writes.Add(1)
	return s.Store.Write(ctx, rs)
}

// cpu returns the CPU time the process used so far.
func cpu(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkAuditorWindow: reads ending one every 500µs, as one busy
// client's, through an Auditor on SQLite with each window: the records
// per transaction and the process's CPU time per record.
func BenchmarkAuditorWindow(b *testing.B) {
	c := audit.Call{Principal: "alice", Server: "files", Tool: "read_file", Effect: hints.EffectRead,
		Decision: audit.Allow, Arguments: json.RawMessage(`{"path":"notes/today.txt"}`)}
	for _, w := range []time.Duration{-1, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		b.Run("window="+max(w, 0).String(), func(b *testing.B) {
			sq, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "audit.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer sq.Close()
			s := &countingStore{Store: sq}
			a, err := audit.New(s, &audit.Options{Window: w})
			if err != nil {
				b.Fatal(err)
			}
			start := cpu(b)
			for b.Loop() {
				e, err := a.Start(b.Context(), c)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(500 * time.Microsecond)
				if err := e.End(b.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
					b.Fatal(err)
				}
			}
			if err := a.Close(b.Context()); err != nil {
				b.Fatal(err)
			}
			st := a.Stats()
			b.ReportMetric(float64(st.Written)/float64(s.writes.Load()), "records/tx")
			b.ReportMetric(float64((cpu(b)-start).Microseconds())/float64(b.N), "cpu-µs/record")
			b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
		})
	}
}
