package audit_test

import (
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/hints"
)

func record() *audit.Record {
	start := time.Date(2026, 7, 28, 9, 30, 0, 123456000, time.UTC)
	return &audit.Record{
		ID: 7, Time: start, Principal: "alice", Server: "files", Tool: "manage_files", Effect: hints.EffectDelete,
		Destructive: true, Decision: audit.Confirm, Reason: "deletes are confirmed", Approver: "bob", DryRun: true,
		Level: audit.LevelFull, ArgsDigest: "abc", Args: json.RawMessage(`{"path":"a.txt"}`), Outcome: audit.OutcomeOK,
		Ended: start.Add(42 * time.Millisecond), Latency: 42 * time.Millisecond, Retries: 1,
		Redactions: map[string]int{"email": 3}, Error: "",
	}
}

// TestRecordJSON: a record survives its JSON Lines form; an unended one
// has no "ended".
func TestRecordJSON(t *testing.T) {
	t.Parallel()
	r := record()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"id":7,"time":"2026-07-28T09:30:00.123456Z","principal":"alice","server":"files","tool":"manage_files","effect":"delete","destructive":true,"decision":"confirm","reason":"deletes are confirmed","approver":"bob","dryRun":true,"level":"full","argsDigest":"abc","args":{"path":"a.txt"},"outcome":"ok","ended":"2026-07-28T09:30:00.165456Z","latencyUs":42000,"retries":1,"redactions":{"email":3}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back audit.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b2) != want {
		t.Fatalf("round trip: %s", b2)
	}
	r.Ended, r.Outcome = time.Time{}, audit.OutcomeUnknown
	if b, _ := json.Marshal(r); strings.Contains(string(b), `"ended"`) {
		t.Errorf("unended record: %s", b)
	}
}

// FuzzRecordJSON: decoding any line either fails or gives a record that
// encodes again.
func FuzzRecordJSON(f *testing.F) {
	b, _ := json.Marshal(record())
	f.Add(string(b))
	f.Add(`{"time":"x"}`)
	f.Add(`{"time":"2026-07-28T09:30:00Z","ended":"2026-07-28T09:30:00Z","args":[1]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var r audit.Record
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			return
		}
		if _, err := json.Marshal(&r); err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", s, err)
		}
	})
}

func seq(rs []*audit.Record, err error) iter.Seq2[*audit.Record, error] {
	return func(yield func(*audit.Record, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// TestWriteStopsAtError: an export reports the store's error after the
// records before it.
func TestWriteStopsAtError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection lost")
	var b strings.Builder
	n, err := audit.WriteJSONL(&b, seq([]*audit.Record{record(), record()}, boom))
	if n != 2 || !errors.Is(err, boom) || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("jsonl: %d, %v, %q", n, err, b.String())
	}
	b.Reset()
	n, err = audit.WriteText(&b, seq([]*audit.Record{record()}, boom))
	if n != 1 || !errors.Is(err, boom) || !strings.Contains(b.String(), "files/manage_files") {
		t.Errorf("text: %d, %v, %q", n, err, b.String())
	}
}

// TestTextIsSanitized: what a client or server said cannot reach a
// terminal as control characters.
func TestTextIsSanitized(t *testing.T) {
	t.Parallel()
	r := record()
	r.Tool, r.Reason, r.Error, r.Principal = "evil\x1b[2J", "line1\nline2\x1b]0;x\x07", "bad\u202e", "al\x07ice"
	r.Redactions = map[string]int{"e\x1bmail": 1}
	var b strings.Builder
	if _, err := audit.WriteText(&b, seq([]*audit.Record{r}, nil)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Count(out, "\n") != 1 {
		t.Fatalf("unsanitized: %q", out)
	}
	for _, want := range []string{"files/evil", `reason="line1 line2"`, "error=bad", "alice", "approver=bob", "retries=1", "(dry-run)", "delete!"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in %q", want, out)
		}
	}
}
