package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/hints"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openSQLite(t *testing.T) (audit.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := sqlstore.Open(t.Context(), "sqlite:"+path, &sqlstore.Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// lock holds the write lock of the SQLite file at path, as another
// process would, until the returned function is called.
func lock(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	for _, tc := range []struct {
		o    audit.Options
		want string
	}{
		{audit.Options{Levels: map[hints.Effect]audit.Level{"destroy": audit.LevelFull}}, `effect "destroy"`},
		{audit.Options{Levels: map[hints.Effect]audit.Level{hints.EffectRead: "verbose"}}, `audit level "verbose": want off, summary or full`},
		{audit.Options{OnUnavailable: "panic"}, `audit failure policy "panic"`},
	} {
		if _, err := audit.New(s, &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, in := range []string{"off", "summary", "full"} {
		if l, err := audit.ParseLevel(in); err != nil || string(l) != in {
			t.Errorf("ParseLevel(%q) = %q, %v", in, l, err)
		}
	}
	for _, in := range []string{"proceed", "fail-closed"} {
		if p, err := audit.ParseFailurePolicy(in); err != nil || string(p) != in {
			t.Errorf("ParseFailurePolicy(%q) = %q, %v", in, p, err)
		}
	}
	if _, err := audit.ParseFailurePolicy("fail-open"); err == nil {
		t.Error("ParseFailurePolicy accepted fail-open")
	}
}

func TestMustAudit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    audit.Call
		want bool
	}{
		{audit.Call{Effect: hints.EffectRead, Decision: audit.Allow}, false},
		{audit.Call{Effect: hints.EffectWrite, Decision: audit.Allow}, false},
		{audit.Call{Effect: hints.EffectWrite, Decision: audit.Allow, Destructive: true}, true},
		{audit.Call{Effect: hints.EffectRead, Decision: audit.Confirm}, true},
		{audit.Call{Effect: hints.EffectDelete, Decision: audit.Allow}, true},
		{audit.Call{Effect: hints.EffectExternal, Decision: audit.Deny}, false},
	} {
		if got := tc.c.MustAudit(); got != tc.want {
			t.Errorf("%+v: MustAudit %v, want %v", tc.c, got, tc.want)
		}
	}
}

func read(i int) audit.Call {
	return audit.Call{Server: "files", Tool: "read_file", Effect: hints.EffectRead, Decision: audit.Allow,
		Arguments: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`)}
}

// TestBufferBounded: with the store stuck, ended reads wait in a buffer
// of the configured size and the rest are dropped and counted, never
// queued without bound; every record is written or counted dropped.
func TestBufferBounded(t *testing.T) {
	t.Parallel()
	s, path := openSQLite(t)
	unlock := lock(t, path)
	a, err := audit.New(s, &audit.Options{Buffer: 2, BatchSize: 1, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 20
	for i := range calls {
		e, err := a.Start(t.Context(), read(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	// The writer holds at most one batch, the buffer two records.
	if st := a.Stats(); st.Dropped < calls-3 {
		t.Errorf("with the store stuck, %d of %d records dropped, want at least %d", st.Dropped, calls, calls-3)
	}
	unlock()
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if st.Written+st.Dropped != calls {
		t.Errorf("stats %+v: written and dropped add up to %d, want %d", st, st.Written+st.Dropped, calls)
	}
	n := 0
	for _, err := range s.Query(t.Context(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if uint64(n) != st.Written {
		t.Errorf("%d records in the store, %d counted written", n, st.Written)
	}
}

// TestCloseGivesUp: Close bounded by its context drops what it could not
// write, stops its goroutine (goleak checks) and says so.
func TestCloseGivesUp(t *testing.T) {
	t.Parallel()
	s, path := openSQLite(t)
	unlock := lock(t, path)
	defer unlock()
	a, err := audit.New(s, &audit.Options{WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e, _ := a.Start(t.Context(), read(i))
		_ = e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v, want context.Canceled", err)
	}
	if st := a.Stats(); st.Dropped != 5 || st.Written != 0 {
		t.Errorf("stats %+v, want 5 dropped", st)
	}
	// After Close, an ended call is written directly (here: dropped, the
	// file is locked).
	e, err := a.Start(t.Context(), read(0))
	if err != nil {
		t.Fatal(err)
	}
	_ = e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK})
	if st := a.Stats(); st.Dropped != 6 {
		t.Errorf("stats %+v after Close, want 6 dropped", st)
	}
}

// TestStartCancelled: a client that went away gets its context's error,
// not an unavailable store.
func TestStartCancelled(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	a, err := audit.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = a.Start(ctx, audit.Call{Server: "s", Tool: "t", Effect: hints.EffectDelete, Decision: audit.Confirm})
	if !errors.Is(err, context.Canceled) || errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("Start with a cancelled context: %v", err)
	}
	if st := a.Stats(); st.Refused != 0 {
		t.Errorf("stats %+v: a cancelled call counted refused", st)
	}
}

// TestArgs: at the full level, argument values are recorded but for
// credentials and the names the call lists, at any depth; large or
// invalid arguments are recorded by digest only.
func TestArgs(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	a, err := audit.New(s, &audit.Options{MaxArgsBytes: 200, Levels: map[hints.Effect]audit.Level{hints.EffectRead: audit.LevelFull}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, sensitive, want string }{
		{`{"path":"a","apiKey":"k","Client_Secret":"s","list":[{"access_token":"t","x":1}],"otp":"123456","hotpath":1}`, "",
			`{"Client_Secret":"[withheld]","apiKey":"[withheld]","hotpath":1,"list":[{"access_token":"[withheld]","x":1}],"otp":"[withheld]","path":"a"}`},
		{`{"ssn":"123-45-6789","nested":{"ssn":"x"},"n":1.50}`, "ssn", `{"n":1.50,"nested":{"ssn":"[withheld]"},"ssn":"[withheld]"}`},
		{`{"blob":"` + strings.Repeat("x", 300) + `"}`, "", `"[omitted: 311 bytes, over the 200-byte limit]"`},
		{`{"a":1} {"b":2}`, "", `"[omitted: not valid JSON]"`},
		{``, "", ``},
		{`null`, "", ``},
	} {
		c := read(0)
		c.Arguments = json.RawMessage(tc.args)
		if tc.sensitive != "" {
			c.SensitiveArgs = []string{tc.sensitive}
		}
		e, err := a.Start(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"Client_Secret":"[withheld]","apiKey":"[withheld]","hotpath":1,"list":[{"access_token":"[withheld]","x":1}],"otp":"[withheld]","path":"a"}`,
		`{"n":1.50,"nested":{"ssn":"[withheld]"},"ssn":"[withheld]"}`,
		`"[omitted: 311 bytes, over the 200-byte limit]"`,
		`"[omitted: not valid JSON]"`, ``, ``,
	}
	i := 0
	for r, err := range s.Query(t.Context(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Args) != want[i] {
			t.Errorf("record %d: args %s, want %s", i, r.Args, want[i])
		}
		if r.Level != audit.LevelFull {
			t.Errorf("record %d: level %s", i, r.Level)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d records, want %d", i, len(want))
	}
}

// TestEndAfterClose: a call that ends after Close is still written.
func TestEndAfterClose(t *testing.T) {
	t.Parallel()
	s, _ := openSQLite(t)
	a, err := audit.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.Start(t.Context(), read(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range s.Query(t.Context(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if st := a.Stats(); n != 1 || st.Written != 1 {
		t.Fatalf("%d records, stats %+v; want the late call written", n, st)
	}
}
