package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// secret returns the base64 of n random bytes.
func secret(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func parseEnv(name, text string, env map[string]string) (*Config, error) {
	return Parse(name, []byte(text), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
}

// TestRequestStateKeys reads the keys replicas share from the environment
// (rotation: two keys, the first seals) and from a file, which only Load
// reads; the keys are never written out.
func TestRequestStateKeys(t *testing.T) {
	t.Parallel()
	k2, k1 := secret(t, 32), secret(t, 48)
	c, err := parseEnv("c.yaml", "servers: {s: {command: x}}\nrequestState: {keysEnv: RS_KEYS}\n",
		map[string]string{"RS_KEYS": " k2:" + k2 + " ,\n k1 : " + k1})
	if err != nil {
		t.Fatal(err)
	}
	rs := c.RequestState
	if len(rs.Keys) != 2 || rs.Keys[0].ID != "k2" || rs.Keys[1].ID != "k1" || len(rs.Keys[1].Secret) != 48 {
		t.Fatalf("keys = %v", rs)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("keysEnv: RS_KEYS")) || bytes.Contains(out, []byte(k2[:16])) {
		t.Errorf("Marshal wrote:\n%s", out)
	}
	for _, s := range []string{rs.String(), fmt.Sprintf("%v %+v %#v", rs, rs, rs)} {
		if strings.Contains(s, k2[:16]) || strings.Contains(s, fmt.Sprint(rs.Keys[0].Secret[:8])) {
			t.Errorf("a secret printed: %s", s)
		}
	}

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "secrets", "rs"), "k3:"+k2+"\n")
	writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers: {s: {command: x}}\nrequestState: {keysFile: secrets/rs}\n")
	c, err = Load(filepath.Join(dir, "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rs := c.RequestState; rs.KeysFile != filepath.Join(dir, "secrets", "rs") || len(rs.Keys) != 1 || rs.Keys[0].ID != "k3" {
		t.Errorf("from a file: %v", rs)
	}
	c = mustParse(t, filepath.Join(dir, "gateway.yaml"), "servers: {s: {command: x}}\nrequestState: {keysFile: secrets/rs}\n")
	if c.RequestState.Keys != nil {
		t.Error("Parse read the keys file")
	}
	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\n")
	if !c.RequestState.IsZero() || c.RequestState.Keys != nil {
		t.Errorf("without the section: %v", c.RequestState)
	}
}

// TestRequestStateRefused: missing, short, weak, malformed and repeated
// keys are refused with what to do, and no message repeats a secret.
func TestRequestStateRefused(t *testing.T) {
	t.Parallel()
	good := secret(t, 32)
	short := secret(t, 16)
	weak := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("abcd"), 8))
	for _, tc := range []struct{ section, env, want string }{
		{"{}", "", "requestState: sets neither keysEnv nor keysFile"},
		{"{keysEnv: RS, keysFile: f}", "", "requestState: sets both keysEnv and keysFile"},
		{"{keysEnv: RS}", "", "requestState.keysEnv: environment variable RS is not set: give it ID:SECRET"},
		{"{keysEnv: RS}", "  ", "environment variable RS is not set"},
		{"{keysEnv: 1RS}", "", `"1RS" is not an environment variable name`},
		{"{keysEnv: RS}", "k1:" + short, `environment variable RS: key "k1": secret of 16 bytes, want at least 32 (make a secret with openssl rand -base64 32)`},
		{"{keysEnv: RS}", "k1:" + weak, `key "k1": the secret is not random (4 distinct bytes in 32)`},
		{"{keysEnv: RS}", good, "has no ':' between ID and secret"},
		{"{keysEnv: RS}", "k1:" + good + ",k1:" + good, `key ID "k1" appears twice`},
		{"{keysEnv: RS}", "k1:" + good + "!!", `key "k1": the secret is not base64`},
		{"{keysEnv: RS}", "k 1:" + good, "key entry 1"},
		{"{keysEnv: RS, extra: 1}", "", "requestState.extra: unknown key"},
	} {
		_, err := parseEnv("c.yaml", "servers: {s: {command: x}}\nrequestState: "+tc.section+"\n", map[string]string{"RS": tc.env})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %q: %v, want %q", tc.section, tc.env, err, tc.want)
			continue
		}
		for _, s := range []string{good, short, weak} {
			if strings.Contains(err.Error(), s[:12]) {
				t.Errorf("%s: the message repeats a secret: %v", tc.section, err)
			}
		}
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "empty"), "\n")
	for _, tc := range []struct{ file, want string }{
		{"missing", "requestState.keysFile: open"},
		{"empty", "is empty: give it ID:SECRET"},
	} {
		writeFile(t, filepath.Join(dir, "g.yaml"), "servers: {s: {command: x}}\nrequestState: {keysFile: "+tc.file+"}\n")
		if _, err := Load(filepath.Join(dir, "g.yaml")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
}

// TestApprovalsSection checks the approvals section's defaults and its
// refusals.
func TestApprovalsSection(t *testing.T) {
	// Not parallel: it sets environment variables.
	c := mustParse(t, "/etc/preflight/c.yaml", "servers: {s: {command: x}}\napprovals: {store: sqlite, path: approvals.db, admins: [alice]}\n")
	want := Approvals{Store: ApprovalsSQLite, Path: "/etc/preflight/approvals.db", TTL: Duration(DefaultApprovalTTL), UseWindow: Duration(DefaultApprovalUseWindow), Admins: []string{"alice"}}
	if a := c.Approvals; a.Store != want.Store || a.Path != want.Path || a.TTL != want.TTL || a.UseWindow != want.UseWindow || len(a.Admins) != 1 {
		t.Errorf("approvals = %+v, want %+v", a, want)
	}
	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\napprovals: {}\n")
	if c.Approvals.Store != ApprovalsSQLite || c.Approvals.IsZero() || c.Approvals.Path != "" {
		t.Errorf("approvals: {} = %+v, want the sqlite store in the default file", c.Approvals)
	}
	t.Setenv("XDG_STATE_HOME", "/var/state")
	p, err := c.Approvals.SQLitePath()
	if err != nil || runtime.GOOS == "linux" && !regexp.MustCompile(`^/var/state/preflight/gateways/c\.yaml-[0-9a-f]{12}/approvals\.db$`).MatchString(p) {
		t.Errorf("the default approvals file: %q, %v", p, err)
	}
	// Another configuration file keeps its approvals apart.
	other := mustParse(t, "/etc/other/c.yaml", "servers: {s: {command: x}}\napprovals: {}\n")
	if q, err := other.Approvals.SQLitePath(); err != nil || q == p || filepath.Dir(filepath.Dir(q)) != filepath.Dir(filepath.Dir(p)) {
		t.Errorf("the default approvals files of two configurations: %q and %q, %v", p, q, err)
	}
	c = mustParse(t, "c.yaml", "servers: {s: {command: x}}\n")
	if !c.Approvals.IsZero() {
		t.Errorf("no section: %+v", c.Approvals)
	}
	if out, _ := Marshal(c); bytes.Contains(out, []byte("approvals")) {
		t.Errorf("Marshal wrote approvals:\n%s", out)
	}
	for _, tc := range []struct{ section, want string }{
		{"{store: redis}", `approvals.store: "redis" is not allowed (allowed: memory, sqlite, postgres)`},
		{"{store: sqlite, path: ''}", "approvals.path: empty"},
		{"{store: postgres}", "approvals.url: required by the postgres store"},
		{"{store: postgres, url: 'mysql://u:hunter2@h/db'}", "approvals.url: not a PostgreSQL URL"},
		{"{url: 'postgres://h/db'}", "approvals.url: not used by the sqlite store"},
		{"{store: memory, path: x}", "approvals.path: not used by the memory store"},
		{"{store: postgres, url: 'postgres://h/db', path: x}", "approvals.path: not used by the postgres store"},
		{"{ttl: 48h}", "approvals.ttl: 48h is more than 24h"},
		{"{useWindow: 25h}", "approvals.useWindow: 25h is more than 24h"},
		{"{admins: [alice, alice]}", `approvals.admins[1]: "alice" is also admins[0]`},
		{"{admins: ['']}", "approvals.admins[0]: a principal has 1 to 128 characters"},
	} {
		_, err := Parse("c.yaml", []byte("servers: {s: {command: x}}\napprovals: "+tc.section+"\n"), testEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want %q", tc.section, err, tc.want)
		}
	}
}
