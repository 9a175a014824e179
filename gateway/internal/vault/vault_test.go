package vault_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/sqldb"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
	"golang.org/x/oauth2"
)

// specs returns a new database of each dialect under test.
func specs(t *testing.T) map[string]string {
	m := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "vault.db")}
	for k, v := range postgresSpecs(t) {
		m[k] = v
	}
	return m
}

// eachDatabase runs f on a new database of each dialect.
func eachDatabase(t *testing.T, f func(t *testing.T, spec string)) {
	for name, spec := range specs(t) {
		t.Run(name, func(t *testing.T) { f(t, spec) })
	}
}

func key(id string, b byte) vault.Key {
	return vault.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, spec string, keys []vault.Key, opts *vault.Options) *vault.Vault {
	t.Helper()
	v, err := vault.Open(context.Background(), spec, keys, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// rawDB opens spec's database to change rows behind the vault's back.
func rawDB(t *testing.T, spec string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sqldb.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Write.ExecContext(context.Background(), db.Rebind(q), args...); err != nil {
		t.Fatal(err)
	}
}

func connection(principal, server, access string, expiry time.Time) *vault.Connection {
	return &vault.Connection{
		Principal: principal, Server: server,
		Token:  oauth2.Token{AccessToken: access, TokenType: "Bearer", RefreshToken: "refresh-" + access, Expiry: expiry},
		Scopes: "files:read files:write", Issuer: "https://auth.example.com", ClientID: "client-1", ClientSecret: "shh",
		TokenURL: "https://auth.example.com/token", AuthStyle: 2,
	}
}

func sameToken(a, b oauth2.Token) bool {
	return a.AccessToken == b.AccessToken && a.TokenType == b.TokenType && a.RefreshToken == b.RefreshToken && a.Expiry.Equal(b.Expiry)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		created := clk.Now()
		want := connection("alice", "files", "a1", created.Add(time.Hour))
		if err := v.Put(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := v.Get(ctx, "alice", "files")
		if err != nil {
			t.Fatal(err)
		}
		if !sameToken(got.Token, want.Token) || got.ClientSecret != "shh" || got.ClientID != "client-1" || got.Scopes != want.Scopes ||
			got.Issuer != want.Issuer || got.TokenURL != want.TokenURL || got.AuthStyle != want.AuthStyle || got.Status != vault.Connected || !got.Created.Equal(created) || !got.Updated.Equal(created) {
			t.Fatalf("Get = %+v, want %+v", got, want)
		}

		// Put again replaces all but the creation time; no client secret.
		clk.Add(time.Minute)
		again := connection("alice", "files", "a2", time.Time{})
		again.ClientSecret = ""
		if err := v.Put(ctx, again); err != nil {
			t.Fatal(err)
		}
		got, err = v.Get(ctx, "alice", "files")
		if err != nil {
			t.Fatal(err)
		}
		if !sameToken(got.Token, again.Token) || got.ClientSecret != "" || !got.Created.Equal(created) || !got.Updated.Equal(clk.Now()) {
			t.Fatalf("Get after Put = %+v", got)
		}

		if _, err := v.Get(ctx, "bob", "files"); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Get of another principal's row: %v, want ErrNotFound", err)
		}
		if err := v.Delete(ctx, "alice", "files"); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Get(ctx, "alice", "files"); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Get after Delete: %v, want ErrNotFound", err)
		}
		if err := v.Delete(ctx, "alice", "files"); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Delete again: %v, want ErrNotFound", err)
		}
	})
}

// TestSealed: the database holds no secret in the clear.
func TestSealed(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		v := open(t, spec, []vault.Key{key("k1", 1)}, nil)
		c := connection("alice", "files", "access-token-in-clear", time.Time{})
		c.ClientSecret = "client-secret-in-clear"
		if err := v.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
		var token, secret, issuer string
		db := rawDB(t, spec)
		if err := db.Read.QueryRowContext(ctx, "SELECT token, client_secret, issuer FROM "+vault.Table).Scan(&token, &secret, &issuer); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{token, secret} {
			if strings.Contains(s, "in-clear") || strings.Contains(s, "refresh-") {
				t.Errorf("stored %q: a secret in the clear", s)
			}
		}
		if issuer != c.Issuer {
			t.Errorf("issuer stored as %q, want it readable", issuer)
		}
	})
}

func TestDoesNotOpen(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		v := open(t, spec, []vault.Key{key("k1", 1)}, nil)
		for _, p := range []string{"alice", "bob", "carol", "dave", "erin"} {
			if err := v.Put(ctx, connection(p, "files", "token-of-"+p, time.Time{})); err != nil {
				t.Fatal(err)
			}
		}
		db := rawDB(t, spec)
		// bob's row gets alice's token; carol's token is altered; dave's
		// client secret is his token; erin's is not a sealed value at all.
		exec(t, db, "UPDATE "+vault.Table+" SET token = (SELECT token FROM "+vault.Table+" WHERE principal = 'alice') WHERE principal = 'bob'")
		var carol string
		if err := db.Read.QueryRowContext(ctx, "SELECT token FROM "+vault.Table+" WHERE principal = 'carol'").Scan(&carol); err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(carol)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-20] ^= 1 // a bit of the ciphertext
		altered := base64.RawURLEncoding.EncodeToString(raw)
		exec(t, db, "UPDATE "+vault.Table+" SET token = ? WHERE principal = 'carol'", altered)
		exec(t, db, "UPDATE "+vault.Table+" SET client_secret = token WHERE principal = 'dave'")
		exec(t, db, "UPDATE "+vault.Table+" SET token = 'not sealed' WHERE principal = 'erin'")

		for _, tc := range []struct{ principal, want string }{
			{"bob", "copied from another row"},
			{"carol", "copied from another row"},
			{"dave", "client secret"},
			{"erin", "not a sealed value"},
		} {
			c, err := v.Get(ctx, tc.principal, "files")
			if !errors.Is(err, vault.ErrCannotOpen) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get %s: %v, %v; want ErrCannotOpen saying %q", tc.principal, c, err, tc.want)
			}
		}
		if _, err := v.Get(ctx, "alice", "files"); err != nil {
			t.Errorf("Get alice: %v", err)
		}

		// Another key does not open alice's row, nor one with her key's ID.
		for _, k := range []vault.Key{key("k2", 2), key("k1", 2)} {
			other := open(t, spec, []vault.Key{k}, nil)
			if _, err := other.Get(ctx, "alice", "files"); !errors.Is(err, vault.ErrCannotOpen) {
				t.Errorf("Get with key %s: %v, want ErrCannotOpen", k.ID, err)
			}
		}
	})
}

func TestRotation(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		old, new := key("old", 1), key("new", 2)
		v := open(t, spec, []vault.Key{old}, nil)
		for _, p := range []string{"alice", "bob"} {
			if err := v.Put(ctx, connection(p, "files", "token-of-"+p, time.Time{})); err != nil {
				t.Fatal(err)
			}
		}
		v.Close()

		both := open(t, spec, []vault.Key{new, old}, nil)
		if err := both.Put(ctx, connection("carol", "files", "token-of-carol", time.Time{})); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"alice", "bob", "carol"} {
			if c, err := both.Get(ctx, p, "files"); err != nil || c.Token.AccessToken != "token-of-"+p || c.ClientSecret != "shh" {
				t.Errorf("Get %s with [new, old]: %v, %v", p, c, err)
			}
		}
		newOnly := open(t, spec, []vault.Key{new}, nil)
		if _, err := newOnly.Get(ctx, "alice", "files"); !errors.Is(err, vault.ErrCannotOpen) || !strings.Contains(err.Error(), `key "old"`) {
			t.Errorf("Get of an old row with [new]: %v, want ErrCannotOpen naming key old", err)
		}
		if n, err := newOnly.Rekey(ctx); !errors.Is(err, vault.ErrCannotOpen) || n != 0 {
			t.Errorf("Rekey without the old key = %d, %v; want 0, ErrCannotOpen", n, err)
		}

		if n, err := both.Rekey(ctx); err != nil || n != 2 {
			t.Fatalf("Rekey = %d, %v; want 2 rows", n, err)
		}
		if n, err := both.Rekey(ctx); err != nil || n != 0 {
			t.Errorf("Rekey again = %d, %v; want 0", n, err)
		}
		for _, p := range []string{"alice", "bob", "carol"} {
			if c, err := newOnly.Get(ctx, p, "files"); err != nil || c.Token.AccessToken != "token-of-"+p || c.ClientSecret != "shh" {
				t.Errorf("Get %s with [new] after Rekey: %v, %v", p, c, err)
			}
		}
	})
}

func TestList(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		exp := clk.Now().Add(time.Hour)
		for _, c := range []*vault.Connection{
			connection("alice", "search", "a", exp),
			connection("alice", "files", "b", time.Time{}),
			connection("bob", "files", "c", exp),
			connection("", "files", "d", exp),
		} {
			if err := v.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Mark(ctx, "alice", "search", vault.Revoked, "signed out"); err != nil {
			t.Fatal(err)
		}
		got, err := v.List(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Server != "files" || got[1].Server != "search" {
			t.Fatalf("List(alice) = %+v, want files and search", got)
		}
		if s := got[1]; s.Principal != "alice" || s.Status != vault.Revoked || s.Reason != "signed out" || !s.Expiry.Equal(exp) ||
			s.Issuer != "https://auth.example.com" || s.Scopes != "files:read files:write" || s.ClientID != "client-1" {
			t.Errorf("List(alice)[1] = %+v", s)
		}
		if !got[0].Expiry.IsZero() {
			t.Errorf("List(alice)[0].Expiry = %v, want none", got[0].Expiry)
		}
		if got, err := v.List(ctx, ""); err != nil || len(got) != 1 || got[0].Principal != "" {
			t.Errorf("List(\"\") = %+v, %v; want the operator's row alone", got, err)
		}
		if got, err := v.List(ctx, "nobody"); err != nil || got == nil || len(got) != 0 {
			t.Errorf("List(nobody) = %#v, %v; want an empty list", got, err)
		}
	})
}

// TestFirst checks that First names the principal who connected a server
// first, among connected ones: a later connection, or an update of an
// earlier one, does not displace them.
func TestFirst(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		clk := newClock()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{Now: clk.Now})
		if _, err := v.First(ctx, "files"); !errors.Is(err, vault.ErrNotFound) {
			t.Fatalf("First of an empty vault: %v, want ErrNotFound", err)
		}
		for _, p := range []string{"alice", "bob", "carol"} {
			clk.Add(time.Minute)
			if err := v.Put(ctx, connection(p, "files", "t-"+p, time.Time{})); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(time.Minute)
		if err := v.Put(ctx, connection("dave", "search", "t", time.Time{})); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute)
		if err := v.Put(ctx, connection("bob", "files", "t-bob-2", time.Time{})); err != nil {
			t.Fatal(err)
		}
		if err := v.Mark(ctx, "alice", "files", vault.Revoked, "gone"); err != nil {
			t.Fatal(err)
		}
		if got, err := v.First(ctx, "files"); err != nil || got != "bob" {
			t.Errorf("First(files) = %q, %v; want bob (alice's is revoked, bob connected before carol)", got, err)
		}
	})
}

func TestMark(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		v := open(t, spec, []vault.Key{key("k1", 1)}, nil)
		if err := v.Put(ctx, connection("alice", "files", "a", time.Time{})); err != nil {
			t.Fatal(err)
		}
		if err := v.Mark(ctx, "alice", "files", vault.RefreshFailed, strings.Repeat("x", 10_000)); err != nil {
			t.Fatal(err)
		}
		c, err := v.Get(ctx, "alice", "files")
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != vault.RefreshFailed || len(c.Reason) > vault.MaxReasonLen+len("…") {
			t.Errorf("after Mark: status %s, reason of %d bytes", c.Status, len(c.Reason))
		}
		if err := v.Mark(ctx, "bob", "files", vault.Revoked, ""); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Mark of a missing row: %v, want ErrNotFound", err)
		}
		if err := v.Mark(ctx, "alice", "files", "gone", ""); err == nil {
			t.Error("Mark with an unknown status succeeded")
		}
	})
}

func TestCaps(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		v := open(t, spec, []vault.Key{key("k1", 1)}, &vault.Options{MaxPerPrincipal: 2, MaxRows: 3})
		put := func(p, s string) error { return v.Put(ctx, connection(p, s, "t", time.Time{})) }
		for _, ps := range [][2]string{{"alice", "a"}, {"alice", "b"}, {"bob", "a"}} {
			if err := put(ps[0], ps[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := put("alice", "c"); !errors.Is(err, vault.ErrFull) || !strings.Contains(err.Error(), "MaxPerPrincipal") {
			t.Errorf("alice's third row: %v, want ErrFull naming MaxPerPrincipal", err)
		}
		if err := put("alice", "a"); err != nil {
			t.Errorf("replacing a row at the cap: %v", err)
		}
		if err := put("bob", "b"); !errors.Is(err, vault.ErrFull) || !strings.Contains(err.Error(), "MaxRows") {
			t.Errorf("a fourth row: %v, want ErrFull naming MaxRows", err)
		}
		if err := v.Delete(ctx, "alice", "b"); err != nil {
			t.Fatal(err)
		}
		if err := put("bob", "b"); err != nil {
			t.Errorf("a row after a delete: %v", err)
		}
	})
}

func TestPutErrors(t *testing.T) {
	t.Parallel()
	v := open(t, "sqlite:"+filepath.Join(t.TempDir(), "vault.db"), []vault.Key{key("k1", 1)}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		c    *vault.Connection
		want string
	}{
		{"no server", connection("alice", "", "t", time.Time{}), "needs a server"},
		{"no token", connection("alice", "files", "", time.Time{}), "needs an access token"},
		{"bad status", &vault.Connection{Server: "files", Token: oauth2.Token{AccessToken: "t"}, Status: "fine"}, `status "fine"`},
		{"long token", connection("alice", "files", strings.Repeat("t", vault.MaxSecretLen+1), time.Time{}), "access token has"},
		{"long scopes", &vault.Connection{Server: "files", Token: oauth2.Token{AccessToken: "t"}, Scopes: strings.Repeat("s", vault.MaxTextLen+1)}, "scopes has"},
	} {
		if err := v.Put(ctx, tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "vault.db")
	for _, tc := range []struct {
		name string
		keys []vault.Key
		want string
	}{
		{"no key", nil, "no key"},
		{"short secret", []vault.Key{{ID: "k1", Secret: make([]byte, 31)}}, "want at least 32"},
		{"no ID", []vault.Key{{Secret: make([]byte, 32)}}, "an ID"},
		{"twice", []vault.Key{key("k1", 1), key("k1", 2)}, "appears twice"},
	} {
		v, err := vault.Open(context.Background(), spec, tc.keys, nil)
		if err == nil {
			v.Close()
			t.Errorf("%s: opened", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := vault.Open(context.Background(), "vault.db", []vault.Key{key("k1", 1)}, nil); err == nil || !strings.Contains(err.Error(), "sqlite:PATH") {
		t.Errorf("a spec without a scheme: %v", err)
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "k1" || len(a.Secret) != 32 || bytes.Equal(a.Secret, b.Secret) {
		t.Errorf("GenerateKey = %v, %v: want ID k1 and 32 fresh random bytes", a, b)
	}
	v := open(t, "sqlite:"+filepath.Join(t.TempDir(), "vault.db"), []vault.Key{a}, nil)
	if err := v.Put(context.Background(), connection("", "files", "t", time.Time{})); err != nil {
		t.Fatal(err)
	}
}

// TestPutTogether: replicas adding the same new row at once all succeed,
// and one row is kept.
func TestPutTogether(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, spec string) {
		ctx := context.Background()
		replicas := make([]*vault.Vault, 4)
		for i := range replicas {
			replicas[i] = open(t, spec, []vault.Key{key("k1", 1)}, nil)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(replicas))
		for i, v := range replicas {
			wg.Go(func() { errs[i] = v.Put(ctx, connection("alice", "files", "t", time.Time{})) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		}
		if got, err := replicas[0].List(ctx, "alice"); err != nil || len(got) != 1 {
			t.Errorf("List = %+v, %v; want one row", got, err)
		}
	})
}
