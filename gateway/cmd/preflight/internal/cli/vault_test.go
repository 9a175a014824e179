package cli

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// TestVaultRekey rotates the vault's keys as docs/upstream-auth.md says:
// a token sealed under k1; the configuration puts k2 first and keeps k1,
// and the gateway still reads it; preflight vault rekey seals it again
// under k2; then k2 alone reads it, and k1 alone no longer does.
func TestVaultRekey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := func(id string, fill byte) string {
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = fill + byte(i)
		}
		return id + ":" + base64.StdEncoding.EncodeToString(secret)
	}
	k1, k2 := key("k1", 1), key("k2", 100)
	configs := 0
	configWith := func(keys string) string {
		configs++
		kf := filepath.Join(dir, "keys-"+strconv.Itoa(configs))
		if err := os.WriteFile(kf, []byte(keys), 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "gateway-"+strconv.Itoa(configs)+".yaml")
		cfg := "servers:\n  docs:\n    url: https://docs.example.com/mcp\n    auth: oauth\n" +
			"vault:\n  path: vault.db\n  keysFile: " + filepath.Base(kf) + "\n"
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	open := func(cfgPath string) (*vault.Vault, error) {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		return setup.OpenVault(context.Background(), cfg.Vault)
	}
	ctx := context.Background()
	read := func(cfgPath string) error {
		v, err := open(cfgPath)
		if err != nil {
			return err
		}
		defer v.Close()
		c, err := v.Get(ctx, "alice", "docs")
		if err == nil && c.Token.AccessToken != "alice-token" {
			t.Fatalf("read %q", c.Token.AccessToken)
		}
		return err
	}

	only1 := configWith(k1)
	v, err := open(only1)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Put(ctx, &vault.Connection{Principal: "alice", Server: "docs",
		Token: oauth2.Token{AccessToken: "alice-token", RefreshToken: "r", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	v.Close()

	both := configWith(k2 + "," + k1)
	if err := read(both); err != nil {
		t.Fatalf("with k2 first and k1 kept: %v", err)
	}
	code, out, errOut := runMain(t, "vault", "-config", both, "rekey")
	if code != exitOK || out != "1 sealed again under key k2\n" {
		t.Fatalf("vault rekey: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := runMain(t, "vault", "-config", both, "-json", "rekey"); code != exitOK || out != `{"resealed":0,"sealingKey":"k2"}`+"\n" {
		t.Fatalf("vault rekey again: exit %d, %q", code, out)
	}
	if err := read(configWith(k2)); err != nil {
		t.Fatalf("with k2 alone after rekey: %v", err)
	}
	if err := read(only1); err == nil || !strings.Contains(err.Error(), "k2") {
		t.Fatalf("with k1 alone after rekey: %v, want an error naming key k2", err)
	}
	if code, _, errOut := runMain(t, "vault", "-config", both, "list"); code != exitUsage || !strings.Contains(errOut, "want rekey") {
		t.Fatalf("vault list: exit %d, %q", code, errOut)
	}
}
