// Package storetest is the conformance suite every audit.Store passes,
// against its real engine: records round-trip, a call that must be
// audited is durable before it is forwarded, a crashed process leaves its
// call unknown, an unavailable store fails such calls closed and recovers,
// concurrent writers from several stores, filters, and the JSON Lines
// export. A store's tests call [Run] and, from TestMain, [Child].
package storetest

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/hints"
)

// Harness is how the suite gets stores of one kind.
type Harness struct {
	// New returns the spec of a fresh, empty store for t.
	New func(t *testing.T) string
	// Open opens the store at spec (applying its migrations).
	Open func(ctx context.Context, spec string) (audit.Store, error)
	// Interruptible returns the spec of a fresh store that stop makes
	// unavailable to writers until start. Each waits until it took
	// effect.
	Interruptible func(t *testing.T) (spec string, stop, start func())
}

// open opens spec for t, closed at cleanup.
func (h Harness) open(t *testing.T, spec string) audit.Store {
	t.Helper()
	s, err := h.Open(t.Context(), spec)
	if err != nil {
		t.Fatalf("open %s: %v", spec, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, h) })
	t.Run("Finish", func(t *testing.T) { testFinish(t, h) })
	t.Run("Bounds", func(t *testing.T) { testBounds(t, h) })
	t.Run("DurableBeforeForward", func(t *testing.T) { testDurableBeforeForward(t, h) })
	t.Run("Levels", func(t *testing.T) { testLevels(t, h) })
	t.Run("Crash", func(t *testing.T) { testCrash(t, h) })
	t.Run("Unavailable", func(t *testing.T) { testUnavailable(t, h) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, h) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, h) })
	t.Run("Export", func(t *testing.T) { testExport(t, h) })
	t.Run("Migrations", func(t *testing.T) { testMigrations(t, h) })
}

// base is the time of the fixed records.
var base = time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)

// full is a record with every field set.
func full() *audit.Record {
	return &audit.Record{
		Time: base.Add(1500 * time.Microsecond), Principal: "alice@example.com", Server: "files", Tool: "manage_files",
		SignedInAs: "shared", Effect: hints.EffectDelete, Destructive: true, Decision: audit.Confirm, Reason: "delete confirmed by rule",
		Approver: "bob@example.com", DryRun: false, Level: audit.LevelFull, ArgsDigest: "digest",
		Args: json.RawMessage(`{"action":"delete","path":"a.txt"}`),
	}
}

// all returns every record of s, oldest first.
func all(t *testing.T, s audit.Store, f audit.Filter) []*audit.Record {
	t.Helper()
	var out []*audit.Record
	for r, err := range s.Query(t.Context(), f) {
		if err != nil {
			t.Fatalf("query %+v: %v", f, err)
		}
		out = append(out, r)
	}
	return out
}

// byID returns the record id of s, failing t if there is none.
func byID(t *testing.T, s audit.Store, id int64) *audit.Record {
	t.Helper()
	for _, r := range all(t, s, audit.Filter{}) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no record %d", id)
	return nil
}

func jsonOf(r *audit.Record) string {
	b, err := json.Marshal(r)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// testRoundTrip: a begun record reads back whole with outcome unknown and
// no end; finished, it reads back with its outcome.
func testRoundTrip(t *testing.T, h Harness) {
	s := h.open(t, h.New(t))
	in := full()
	id, err := s.Begin(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := byID(t, s, id)
	want := *in
	want.ID, want.Outcome = id, audit.OutcomeUnknown
	if jsonOf(got) != jsonOf(&want) {
		t.Fatalf("begun:\n got %s\nwant %s", jsonOf(got), jsonOf(&want))
	}
	if !got.Ended.IsZero() {
		t.Errorf("a begun record has an end: %v", got.Ended)
	}
	fin := want
	fin.Outcome, fin.Ended, fin.Latency, fin.Retries = audit.OutcomeToolError, base.Add(time.Second), 1234*time.Microsecond, 2
	fin.Redactions, fin.Error = map[string]int{"email": 2, "aws-access-token": 1}, "upstream said no"
	if err := s.Finish(t.Context(), &fin); err != nil {
		t.Fatal(err)
	}
	if got := byID(t, s, id); jsonOf(got) != jsonOf(&fin) {
		t.Fatalf("finished:\n got %s\nwant %s", jsonOf(got), jsonOf(&fin))
	}
}

// testFinish: an outcome is recorded once; the same outcome again is
// accepted (a retried write), another one or an unknown call is not.
func testFinish(t *testing.T, h Harness) {
	s := h.open(t, h.New(t))
	id, err := s.Begin(t.Context(), full())
	if err != nil {
		t.Fatal(err)
	}
	r := full()
	r.ID, r.Outcome, r.Ended = id, audit.OutcomeOK, base.Add(time.Second)
	if err := s.Finish(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(t.Context(), r); err != nil {
		t.Errorf("the same outcome again: %v", err)
	}
	other := *r
	other.Outcome = audit.OutcomeError
	if err := s.Finish(t.Context(), &other); !errors.Is(err, audit.ErrNotPending) {
		t.Errorf("another outcome after the first: %v, want ErrNotPending", err)
	}
	if got := byID(t, s, id); got.Outcome != audit.OutcomeOK {
		t.Errorf("outcome %q after a second finish, want ok", got.Outcome)
	}
	missing := *r
	missing.ID = id + 1000
	if err := s.Finish(t.Context(), &missing); !errors.Is(err, audit.ErrNotPending) {
		t.Errorf("finishing a call never begun: %v, want ErrNotPending", err)
	}
}

// testBounds: text of any bytes (NUL, invalid UTF-8, far too long) is
// stored cut and clean, not refused.
func testBounds(t *testing.T, h Harness) {
	s := h.open(t, h.New(t))
	r := full()
	r.Tool = "bad\x00tool\xff"
	r.Reason = strings.Repeat("é", audit.MaxReasonBytes)
	r.Outcome, r.Ended = audit.OutcomeError, base.Add(time.Second)
	r.Error = strings.Repeat("x", 100_000)
	if err := s.Write(t.Context(), []*audit.Record{r}); err != nil {
		t.Fatal(err)
	}
	got := all(t, s, audit.Filter{})[0]
	if got.Tool != "badtool\uFFFD" {
		t.Errorf("tool %q", got.Tool)
	}
	if len(got.Reason) > audit.MaxReasonBytes || !strings.HasSuffix(got.Reason, "…") || len(got.Error) > audit.MaxErrorBytes {
		t.Errorf("reason of %d bytes, error of %d bytes: not cut to their bounds", len(got.Reason), len(got.Error))
	}
}

// opts are the auditor options of the tests.
func opts(o *audit.Options) *audit.Options {
	if o == nil {
		o = &audit.Options{}
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 2 * time.Second
	}
	return o
}

func newAuditor(t *testing.T, s audit.Store, o *audit.Options) *audit.Auditor {
	t.Helper()
	a, err := audit.New(s, opts(o))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("close auditor: %v", err)
		}
	})
	return a
}

// deleteCall is a call that must be audited.
func deleteCall() audit.Call {
	return audit.Call{Principal: "alice", Server: "files", Tool: "manage_files", SignedInAs: "alice", Effect: hints.EffectDelete,
		Destructive: true, Decision: audit.Confirm, Reason: "deletes are confirmed", Approver: "alice",
		Arguments: json.RawMessage(`{"action":"delete","path":"a.txt","api_token":"s3cr3t"}`)}
}

// readCall is a call that need not be.
func readCall() audit.Call {
	return audit.Call{Principal: "alice", Server: "files", Tool: "manage_files", Effect: hints.EffectRead,
		Decision: audit.Allow, Reason: "reads are allowed", Arguments: json.RawMessage(`{"action":"read","path":"a.txt"}`)}
}

// testDurableBeforeForward: when Start returns for a call that must be
// audited, another connection (another store, as another replica would
// open) already reads the record, as unknown; after End, with its
// outcome. A read is written only after it ends.
func testDurableBeforeForward(t *testing.T, h Harness) {
	spec := h.New(t)
	s := h.open(t, spec)
	other := h.open(t, spec)
	a := newAuditor(t, s, nil)
	e, err := a.Start(t.Context(), deleteCall())
	if err != nil {
		t.Fatal(err)
	}
	if e.ID() == 0 {
		t.Fatal("a delete was not written when it started")
	}
	// Here the gateway would forward the call.
	got := byID(t, other, e.ID())
	if got.Outcome != audit.OutcomeUnknown || !got.Ended.IsZero() || got.Tool != "manage_files" || got.Approver != "alice" ||
		got.SignedInAs != "alice" {
		t.Fatalf("before the call ends, the other store reads %s", jsonOf(got))
	}
	if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK, Redactions: map[string]int{"email": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeError}); !errors.Is(err, audit.ErrEnded) {
		t.Errorf("a second End: %v, want ErrEnded", err)
	}
	got = byID(t, other, e.ID())
	if got.Outcome != audit.OutcomeOK || got.Ended.IsZero() || got.Latency < 0 || got.Redactions["email"] != 1 {
		t.Fatalf("after the call ended, the other store reads %s", jsonOf(got))
	}

	r, err := a.Start(t.Context(), readCall())
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != 0 || len(all(t, other, audit.Filter{Effect: hints.EffectRead})) != 0 {
		t.Fatal("a read was written before it ended")
	}
	if err := r.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	reads := all(t, other, audit.Filter{Effect: hints.EffectRead})
	if len(reads) != 1 || reads[0].Outcome != audit.OutcomeOK || reads[0].Level != audit.LevelSummary {
		t.Fatalf("after Close, reads: %v", reads)
	}
	if st := a.Stats(); st.Written != 2 || st.Dropped != 0 {
		t.Errorf("stats %+v, want 2 written, none dropped", st)
	}
}

// testLevels: full records argument values but sensitive ones, summary
// only the digest, off nothing, except for a call that must be audited;
// Log records calls that were not forwarded.
func testLevels(t *testing.T, h Harness) {
	spec := h.New(t)
	s := h.open(t, spec)
	a := newAuditor(t, s, &audit.Options{Levels: map[hints.Effect]audit.Level{
		hints.EffectRead: audit.LevelOff, hints.EffectDelete: audit.LevelOff, hints.EffectWrite: audit.LevelFull,
	}})
	end := func(c audit.Call) {
		t.Helper()
		e, err := a.Start(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	end(readCall()) // off: not recorded
	del := deleteCall()
	end(del) // off, but must be audited: summary
	write := audit.Call{Principal: "bob", Server: "files", Tool: "write_file", Effect: hints.EffectWrite, Decision: audit.Allow,
		Arguments:     json.RawMessage(`{"path":"b.txt","content":"hello","auth":{"Password":"hunter2","user":"bob"},"note":"n"}`),
		SensitiveArgs: []string{"note"}}
	end(write)
	denied := write
	denied.Decision, denied.Reason, denied.Tool = audit.Deny, "writes to b.txt are denied", "write_denied"
	if err := a.Log(t.Context(), denied, audit.Ending{Outcome: audit.OutcomeDenied}); err != nil {
		t.Fatal(err)
	}
	declined := deleteCall()
	if err := a.Log(t.Context(), declined, audit.Ending{Outcome: audit.OutcomeDeclined}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := all(t, s, audit.Filter{})
	if len(got) != 4 {
		t.Fatalf("%d records, want 4 (the read is off):\n%v", len(got), got)
	}
	byTool := map[string][]*audit.Record{}
	for _, r := range got {
		byTool[r.Tool] = append(byTool[r.Tool], r)
	}
	for _, d := range byTool["manage_files"] {
		if d.Level != audit.LevelSummary || d.Args != nil || d.ArgsDigest == "" {
			t.Errorf("delete at level off: %s, want summary with a digest and no arguments", jsonOf(d))
		}
	}
	if n := len(byTool["manage_files"]); n != 2 {
		t.Errorf("%d deletes recorded, want 2 (one run, one declined)", n)
	}
	w := byTool["write_file"][0]
	const wantArgs = `{"auth":{"Password":"[withheld]","user":"bob"},"content":"hello","note":"[withheld]","path":"b.txt"}`
	if w.Level != audit.LevelFull || string(w.Args) != wantArgs {
		t.Errorf("write at level full: level %s, args %s, want %s", w.Level, w.Args, wantArgs)
	}
	if w.ArgsDigest == "" || w.ArgsDigest == byTool["manage_files"][0].ArgsDigest {
		t.Errorf("digest %q", w.ArgsDigest)
	}
	if d := byTool["write_denied"]; len(d) != 1 || d[0].Outcome != audit.OutcomeDenied || d[0].Decision != audit.Deny {
		t.Errorf("denied write: %v", d)
	}
}

// envChild names the variable that makes a test binary the crashing
// child of testCrash: its value is the store's spec.
const envChild = "PREFLIGHT_AUDIT_TEST_CHILD"

// Child makes the test binary, when started by the Crash test, begin a
// call that must be audited, print its ID and wait to be killed. Call it
// first in TestMain; it returns at once in any other process.
func Child(open func(ctx context.Context, spec string) (audit.Store, error)) {
	spec := os.Getenv(envChild)
	if spec == "" {
		return
	}
	err := func() error {
		ctx := context.Background()
		s, err := open(ctx, spec)
		if err != nil {
			return err
		}
		a, err := audit.New(s, nil)
		if err != nil {
			return err
		}
		e, err := a.Start(ctx, deleteCall())
		if err != nil {
			return err
		}
		fmt.Printf("begun %d\n", e.ID())
		// Forwarding the call: the parent kills the process now. If the
		// parent dies first, stdin ends and so does this process.
		_, _ = io.Copy(io.Discard, os.Stdin)
		return errors.New("not killed")
	}()
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(3)
}

// testCrash: a process killed after Start and before End (a real
// process, SIGKILL) leaves its call recorded, as unknown.
func testCrash(t *testing.T, h Harness) {
	spec := h.New(t)
	s := h.open(t, spec) // migrated before the child opens it
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	id, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "begun ")), 10, 64)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	got := byID(t, s, id)
	if got.Outcome != audit.OutcomeUnknown || !got.Ended.IsZero() || got.Tool != "manage_files" {
		t.Fatalf("the killed call reads %s, want outcome unknown and no end", jsonOf(got))
	}
	unknown := all(t, s, audit.Filter{Outcome: audit.OutcomeUnknown})
	if len(unknown) != 1 || unknown[0].ID != id {
		t.Fatalf("filter outcome=unknown: %v", unknown)
	}
}

// testUnavailable: with the store unavailable, a call that must be
// audited is refused with the clear error (and leaves no record), a read
// proceeds and its record is counted dropped, or is refused under
// FailClosed; a call begun before the outage reads as unknown, never as
// done; once the store is back, calls are recorded again.
func testUnavailable(t *testing.T, h Harness) {
	spec, stop, start := h.Interruptible(t)
	s := h.open(t, spec)
	// While the store is down, each write waits for its timeout at most.
	a := newAuditor(t, s, &audit.Options{WriteTimeout: time.Second})
	closed := newAuditor(t, s, &audit.Options{OnUnavailable: audit.FailClosed, WriteTimeout: time.Second})

	inFlight, err := a.Start(t.Context(), deleteCall())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	_, err = a.Start(t.Context(), deleteCall())
	var ue *audit.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("a delete with the store down: %v, want an UnavailableError", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "audit store unavailable: ") || !strings.HasSuffix(msg, "; the call was not forwarded") {
		t.Errorf("message %q", msg)
	}
	read, err := a.Start(t.Context(), readCall())
	if err != nil {
		t.Fatalf("a read under Proceed with the store down: %v", err)
	}
	if err := read.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Start(t.Context(), readCall()); !errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("a read under FailClosed with the store down: %v, want an UnavailableError", err)
	}
	if err := inFlight.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err == nil {
		t.Fatal("recording an outcome with the store down succeeded")
	}
	// The batched write of the read fails while the store is down.
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Refused != 1 || st.Dropped != 1 || st.Unfinished != 1 {
		t.Errorf("stats %+v, want 1 refused, 1 dropped, 1 unfinished", st)
	}
	if st := closed.Stats(); st.Refused != 1 {
		t.Errorf("fail-closed stats %+v, want 1 refused", st)
	}

	start()
	b := newAuditor(t, s, nil)
	e, err := b.Start(t.Context(), deleteCall())
	if err != nil {
		t.Fatalf("after the store is back: %v", err)
	}
	if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	r, err := newAuditor(t, s, &audit.Options{OnUnavailable: audit.FailClosed}).Start(t.Context(), readCall())
	if err != nil {
		t.Fatalf("a read under FailClosed after the store is back: %v", err)
	}
	if err := r.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	got := all(t, s, audit.Filter{})
	var summary []string
	for _, r := range got {
		summary = append(summary, fmt.Sprintf("%d %s %s", r.ID, r.Effect, r.Outcome))
	}
	want := []string{
		fmt.Sprintf("%d delete unknown", inFlight.ID()), // began, ran, outcome lost: never "ok"
		fmt.Sprintf("%d delete ok", e.ID()),
		fmt.Sprintf("%d read ok", r.ID()),
	}
	if !slices.Equal(summary, want) {
		t.Fatalf("records after recovery:\n%s\nwant\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
	}
}

// testConcurrent: writers in two stores over one database (two replicas)
// begin, finish and batch-write at once; every record is there once.
func testConcurrent(t *testing.T, h Harness) {
	spec := h.New(t)
	stores := []audit.Store{h.open(t, spec), h.open(t, spec)}
	const workers, calls = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*calls)
	for si, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for i := range calls {
					r := full()
					r.Principal = fmt.Sprintf("s%d-w%d-c%d", si, w, i)
					id, err := s.Begin(t.Context(), r)
					if err != nil {
						errs <- err
						return
					}
					r.ID, r.Outcome, r.Ended = id, audit.OutcomeOK, time.Now()
					if err := s.Finish(t.Context(), r); err != nil {
						errs <- err
						return
					}
					b := full()
					b.Principal, b.Effect, b.Outcome, b.Ended = r.Principal+"-batch", hints.EffectRead, audit.OutcomeOK, time.Now()
					if err := s.Write(t.Context(), []*audit.Record{b, b}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := all(t, stores[0], audit.Filter{})
	if want := len(stores) * workers * calls * 3; len(got) != want {
		t.Fatalf("%d records, want %d", len(got), want)
	}
	ids := map[int64]bool{}
	perPrincipal := map[string]int{}
	for _, r := range got {
		if ids[r.ID] {
			t.Fatalf("ID %d twice", r.ID)
		}
		ids[r.ID] = true
		perPrincipal[r.Principal]++
		if r.Outcome != audit.OutcomeOK {
			t.Fatalf("record %d: outcome %s", r.ID, r.Outcome)
		}
	}
	for p, n := range perPrincipal {
		if want := map[bool]int{true: 2, false: 1}[strings.HasSuffix(p, "-batch")]; n != want {
			t.Errorf("%s: %d records, want %d", p, n, want)
		}
	}
}

// fixture is the set of records the filter and export tests read: varied
// principals, servers, tools, effects, decisions and outcomes, a minute
// apart, the last never finished.
func fixture() []*audit.Record {
	type row struct {
		principal, server, tool string
		effect                  hints.Effect
		decision                audit.Decision
		outcome                 audit.Outcome
	}
	rows := []row{
		{"alice", "files", "read_file", hints.EffectRead, audit.Allow, audit.OutcomeOK},
		{"bob", "files", "read_file", hints.EffectRead, audit.Allow, audit.OutcomeToolError},
		{"alice", "files", "delete_file", hints.EffectDelete, audit.Confirm, audit.OutcomeOK},
		{"bob", "files", "delete_file", hints.EffectDelete, audit.Confirm, audit.OutcomeDeclined},
		{"", "github", "create_issue", hints.EffectWrite, audit.Allow, audit.OutcomeOK},
		{"alice", "github", "create_issue", hints.EffectWrite, audit.Deny, audit.OutcomeDenied},
		{"carol", "github", "merge_pull_request", hints.EffectExternal, audit.Confirm, audit.OutcomeTimeout},
		{"bob", "files", "write_file", hints.EffectWrite, audit.Allow, audit.OutcomeError},
		{"alice", "files", "write_file", hints.EffectWrite, audit.Allow, audit.OutcomeUnknown},
		{"carol", "files", "delete_file", hints.EffectDelete, audit.Confirm, ""},
	}
	var rs []*audit.Record
	for i, r := range rows {
		rec := &audit.Record{
			Time: base.Add(time.Duration(i) * time.Minute), Principal: r.principal, Server: r.server, Tool: r.tool,
			Effect: r.effect, Destructive: r.effect == hints.EffectDelete, Decision: r.decision,
			Reason: string(r.decision) + " by the " + string(r.effect) + " rule", Level: audit.LevelSummary,
			ArgsDigest: fmt.Sprintf("digest-%d", i), Outcome: r.outcome,
		}
		if r.decision == audit.Confirm && r.outcome == audit.OutcomeOK {
			rec.Approver = "dave"
		}
		if r.server == "github" { // signs in with OAuth, as each principal
			rec.SignedInAs = cmp.Or(r.principal, "local")
		}
		if r.effect == hints.EffectWrite {
			rec.Level, rec.Args = audit.LevelFull, json.RawMessage(fmt.Sprintf(`{"n":%d,"path":"f\u001b[31m.txt"}`, i))
		}
		if r.outcome != "" {
			rec.Ended = rec.Time.Add(time.Duration(i+1) * 1500 * time.Microsecond)
			rec.Latency = rec.Ended.Sub(rec.Time)
		}
		if r.outcome == audit.OutcomeOK && r.effect == hints.EffectRead {
			rec.Redactions = map[string]int{"email": 2, "github-pat": 1}
		}
		if r.outcome == audit.OutcomeError {
			rec.Error, rec.Retries = "upstream \x1b[2Jgone", 2
		}
		rs = append(rs, rec)
	}
	return rs
}

// match is what a filter selects, by its definition.
func match(f audit.Filter, r *audit.Record) bool {
	outcome := r.Outcome
	if outcome == "" {
		outcome = audit.OutcomeUnknown
	}
	return (f.Since.IsZero() || !r.Time.Before(f.Since)) && (f.Until.IsZero() || r.Time.Before(f.Until)) &&
		(f.Principal == "" || r.Principal == f.Principal) && (f.Server == "" || r.Server == f.Server) &&
		(f.Tool == "" || r.Tool == f.Tool) && (f.Effect == "" || r.Effect == f.Effect) &&
		(f.Decision == "" || r.Decision == f.Decision) && (f.Outcome == "" || outcome == f.Outcome)
}

// testFilters: every filter selects what its definition says, in order,
// with limits and newest first.
func testFilters(t *testing.T, h Harness) {
	s := h.open(t, h.New(t))
	rs := fixture()
	if err := s.Write(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	filters := []audit.Filter{
		{},
		{Since: base.Add(3 * time.Minute)},
		{Until: base.Add(3 * time.Minute)},
		{Since: base.Add(2 * time.Minute), Until: base.Add(5 * time.Minute)},
		{Principal: "alice"}, {Principal: "bob", Server: "files"}, {Principal: "nobody"},
		{Server: "github"}, {Tool: "delete_file"},
		{Effect: hints.EffectDelete}, {Effect: hints.EffectWrite, Decision: audit.Allow},
		{Decision: audit.Confirm}, {Decision: audit.Deny},
		{Outcome: audit.OutcomeOK}, {Outcome: audit.OutcomeUnknown}, {Outcome: audit.OutcomeDeclined},
		{Effect: hints.EffectDelete, Outcome: audit.OutcomeUnknown, Principal: "carol"},
	}
	for _, f := range filters {
		var want []string
		for i, r := range rs {
			if match(f, r) {
				want = append(want, strconv.Itoa(i+1))
			}
		}
		var got []string
		for _, r := range all(t, s, f) {
			got = append(got, strconv.FormatInt(r.ID, 10))
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %+v: got records %v, want %v", f, got, want)
		}
	}
	// Hand-checked, so that match itself is checked too.
	if n := len(all(t, s, audit.Filter{Outcome: audit.OutcomeUnknown})); n != 2 {
		t.Errorf("outcome unknown: %d records, want 2 (one recorded unknown, one never finished)", n)
	}
	if got := all(t, s, audit.Filter{Effect: hints.EffectDelete, Limit: 2}); len(got) != 2 || got[0].ID != 3 || got[1].ID != 4 {
		t.Errorf("the first 2 deletes: %v", got)
	}
	if got := all(t, s, audit.Filter{Effect: hints.EffectDelete, Limit: 2, Newest: true}); len(got) != 2 || got[0].ID != 10 || got[1].ID != 4 {
		t.Errorf("the last 2 deletes, newest first: %v", got)
	}
	// An iteration stopped early releases the query.
	for range s.Query(t.Context(), audit.Filter{}) {
		break
	}
	if len(all(t, s, audit.Filter{})) != len(rs) {
		t.Error("the store reads differently after an iteration stopped early")
	}
}

// testExport: the fixture, written and read back, exports as the golden
// JSON Lines, the same for every store.
func testExport(t *testing.T, h Harness) {
	s := h.open(t, h.New(t))
	if err := s.Write(t.Context(), fixture()); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	n, err := audit.WriteJSONL(&b, s.Query(t.Context(), audit.Filter{}))
	if err != nil || n != len(fixture()) {
		t.Fatalf("export: %d records, %v", n, err)
	}
	Golden(t, "export.jsonl", b.String())
	b.Reset()
	if _, err := audit.WriteText(&b, s.Query(t.Context(), audit.Filter{})); err != nil {
		t.Fatal(err)
	}
	Golden(t, "export.txt", b.String())
}

// testMigrations: opening again changes nothing; stores opened at once on
// a fresh database (replicas starting together) agree.
func testMigrations(t *testing.T, h Harness) {
	spec := h.New(t)
	var wg sync.WaitGroup
	stores := make([]audit.Store, 3)
	errs := make([]error, 3)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = h.Open(t.Context(), spec) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	id, err := stores[0].Begin(t.Context(), full())
	if err != nil {
		t.Fatal(err)
	}
	again := h.open(t, spec)
	if got := byID(t, again, id); got.Tool != "manage_files" {
		t.Fatalf("reopened: %s", jsonOf(got))
	}
}

// Bench measures Begin then Finish of one call that must be audited: what
// such a call costs the gateway.
func Bench(b *testing.B, s audit.Store) {
	ctx := b.Context()
	for b.Loop() {
		r := full()
		id, err := s.Begin(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		r.ID, r.Outcome, r.Ended, r.Latency = id, audit.OutcomeOK, time.Now(), time.Millisecond
		if err := s.Finish(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchWrite measures a batched write of n records, per record.
func BenchWrite(b *testing.B, s audit.Store, n int) {
	ctx := b.Context()
	rs := make([]*audit.Record, n)
	for i := range rs {
		r := full()
		r.Effect, r.Outcome, r.Ended = hints.EffectRead, audit.OutcomeOK, base.Add(time.Second)
		rs[i] = r
	}
	for b.Loop() {
		if err := s.Write(ctx, rs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
