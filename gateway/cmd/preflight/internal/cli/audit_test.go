package cli

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// fillAudit writes the records the audit tests read into the store at
// spec: a read, a confirmed delete that ran, a delete whose outcome was
// never recorded (to an upstream signed in to with a shared grant), and a write whose tool name and error carry escape
// sequences.
func fillAudit(t *testing.T, spec string) {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(min int) time.Time { return time.Date(2026, 7, 28, 9, min, 0, 0, time.UTC) }
	done := []*audit.Record{
		{Time: at(0), Principal: "alice", Server: "files", Tool: "read_file", Effect: hints.EffectRead, Decision: audit.Allow,
			Reason: "reads are allowed", Level: audit.LevelSummary, ArgsDigest: "d0", Outcome: audit.OutcomeOK,
			Ended: at(0).Add(2 * time.Millisecond), Latency: 2 * time.Millisecond, Redactions: map[string]int{"email": 1}},
		{Time: at(1), Principal: "bob", Server: "files", Tool: "delete_file", Effect: hints.EffectDelete, Destructive: true,
			Decision: audit.Confirm, Reason: "deletes are confirmed", Approver: "bob", Level: audit.LevelFull, ArgsDigest: "d1",
			Args: json.RawMessage(`{"path":"a.txt"}`), Outcome: audit.OutcomeOK, Ended: at(1).Add(time.Second), Latency: time.Second},
	}
	if err := s.Write(t.Context(), done); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(t.Context(), &audit.Record{Time: at(2), Principal: "carol", Server: "files", Tool: "delete_file",
		SignedInAs: "shared", Effect: hints.EffectDelete, Destructive: true, Decision: audit.Confirm, Reason: "deletes are confirmed",
		Approver: "carol", Level: audit.LevelSummary, ArgsDigest: "d2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), []*audit.Record{{Time: at(3), Principal: "alice", Server: "evil",
		Tool: "wipe\x1b[2J\x1b]0;owned\x07", Effect: hints.EffectWrite, Decision: audit.Allow, Level: audit.LevelSummary,
		ArgsDigest: "d3", Outcome: audit.OutcomeError, Ended: at(3).Add(time.Millisecond), Latency: time.Millisecond,
		Retries: 1, Error: "upstream \u202esaid\x1b[31m no"}}); err != nil {
		t.Fatal(err)
	}
}

// TestAudit: the SQLite store answers queries with the expected output:
// filters, unknown outcomes, JSON Lines, sanitized text, -o
// (TestAuditPostgres asks PostgreSQL the same).
func TestAudit(t *testing.T) {
	t.Parallel()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "audit.db")
	fillAudit(t, spec)
	checkAudit(t, spec)
}

// checkAudit runs the audit command's queries against the store at spec,
// filled by fillAudit.
func checkAudit(t *testing.T, spec string) {
	t.Helper()
	code, out, errOut := runMain(t, "audit", "-store", spec)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	golden(t, "audit-text.golden", out)

	code, out, errOut = runMain(t, "audit", "-store", spec, "-format", "jsonl", "-effect", "delete")
	if code != exitOK {
		t.Fatalf("jsonl: exit %d, stderr:\n%s", code, errOut)
	}
	var recs []audit.Record
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Principal != "bob" || recs[0].Outcome != audit.OutcomeOK || string(recs[0].Args) != `{"path":"a.txt"}` ||
		recs[1].Principal != "carol" || recs[1].Outcome != audit.OutcomeUnknown || !recs[1].Ended.IsZero() ||
		recs[0].SignedInAs != "" || recs[1].SignedInAs != "shared" {
		t.Fatalf("-effect delete:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want []string // principals, in order
	}{
		{[]string{"-principal", "alice"}, []string{"alice", "alice"}},
		{[]string{"-outcome", "unknown"}, []string{"carol"}},
		{[]string{"-decision", "confirm", "-server", "files"}, []string{"bob", "carol"}},
		{[]string{"-since", "2026-07-28T09:01:00Z", "-until", "2026-07-28T09:03:00Z"}, []string{"bob", "carol"}},
		{[]string{"-newest", "-limit", "2"}, []string{"alice", "carol"}},
		{[]string{"-tool", "read_file", "-outcome", "ok", "-effect", "read"}, []string{"alice"}},
		{[]string{"-since", "1h"}, nil}, // the records are from 2026-07-28
	} {
		code, out, errOut := runMain(t, append([]string{"audit", "-store", spec, "-format", "json"}, tc.args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stderr:\n%s", tc.args, code, errOut)
		}
		var got []string
		for line := range strings.Lines(out) {
			var r audit.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Principal)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%v: principals %v, want %v", tc.args, got, tc.want)
		}
	}

	file := filepath.Join(t.TempDir(), "audit.jsonl")
	code, _, errOut = runMain(t, "audit", "-store", spec, "-format", "jsonl", "-o", file)
	_, stdout, _ := runMain(t, "audit", "-store", spec, "-format", "jsonl")
	b, err := os.ReadFile(file)
	if code != exitOK || err != nil || string(b) != stdout || !strings.Contains(errOut, "wrote "+file) {
		t.Fatalf("-o: exit %d, %v, stderr %q, file:\n%s", code, err, errOut, b)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "audit.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "-store", "sqlite:a.db", "-data", "d"}, "give one of -store, -config and -data"},
		{[]string{"audit", "-store", db, "extra"}, "audit takes no arguments"},
		{[]string{"audit", "-store", db, "-format", "xml"}, `invalid value "xml" for flag -format: want text, jsonl or json`},
		{[]string{"audit", "-store", db, "-since", "yesterday"}, `-since: "yesterday": want a time`},
		{[]string{"audit", "-store", db, "-effect", "destroy"}, `-effect "destroy": want read, write, external or delete`},
		{[]string{"audit", "-store", db, "-decision", "maybe"}, `-decision "maybe"`},
		{[]string{"audit", "-store", db, "-outcome", "fine"}, `-outcome "fine"`},
		{[]string{"audit", "-store", db, "-limit", "-1"}, "-limit -1"},
		{[]string{"audit", "-store", db, "-since", "1h", "-until", "2h"}, "is not before until"},
	} {
		code, out, errOut := runMain(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "preflight audit") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestAuditCouldNotRun: a store that cannot be opened exits 3 and says
// why, with no password.
func TestAuditCouldNotRun(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct{ store, want string }{
		{"sqlite:" + filepath.Join(t.TempDir(), "missing.db"), "no such file"},
		{"postgres://preflight:hunter2@" + closed + "/audit?connect_timeout=5", "connect"},
		{"mysql://localhost/audit", "want sqlite:PATH or postgres://"},
	} {
		code, out, errOut := runMain(t, "audit", "-store", tc.store)
		if code != exitCouldNotRun || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "hunter2") {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 3 and %q", tc.store, code, out, errOut, tc.want)
		}
	}
	// An -o file is not created when the export fails.
	file := filepath.Join(t.TempDir(), "out.jsonl")
	if code, _, _ := runMain(t, "audit", "-store", "sqlite:"+filepath.Join(t.TempDir(), "missing.db"), "-o", file); code != exitCouldNotRun {
		t.Errorf("exit %d", code)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("-o file after a failure: %v", err)
	}
}

// TestAuditDefaultDataDir: without -store, -config or -data, audit reads
// the log serve keeps on the built-in setup's default data directory; when
// there is none it says how to make one, and exits 2. The user's cache is
// a temporary directory.
func TestAuditDefaultDataDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	dir, err := defaultDataDir()
	if err != nil || !strings.HasPrefix(dir, cache) {
		t.Fatalf("default data directory %q, %v: not under the test's cache", dir, err)
	}
	code, out, errOut := runMain(t, "audit")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "no audit log in "+dir) ||
		!strings.Contains(errOut, "start the built-in setup with 'preflight serve'") || !strings.Contains(errOut, "-store STORE") {
		t.Fatalf("audit without a log: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}

	url, _, stderr, stop := runServe(t, "-http", "127.0.0.1:0")
	read := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}}
	if r := wiretest.Stateless(url, nil).Call(t, "tools/call", read); r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("call: %s", r.Raw)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, stderr.String())
	}
	code, out, errOut = runMain(t, "audit", "-format", "jsonl")
	var rec map[string]any
	if code != exitOK || strings.Count(out, "\n") != 1 {
		t.Fatalf("audit: exit %d, stderr %s, records:\n%s", code, errOut, out)
	}
	decodeJSON(t, out, &rec)
	if rec["server"] != "files" || rec["tool"] != "manage_files" || rec["effect"] != "read" || rec["outcome"] != "ok" {
		t.Errorf("audit record %v", rec)
	}
}
