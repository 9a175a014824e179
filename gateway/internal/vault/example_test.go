package vault_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
	"golang.org/x/oauth2"
)

// A gateway keeps the tokens of its principals' sign-ins in the vault,
// lists them without opening them, and refreshes one when it expires.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vault")
	defer os.RemoveAll(dir)
	key, err := vault.GenerateKey() // or requeststate.ParseKeys of the configured keys
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := vault.Open(ctx, "sqlite:"+filepath.Join(dir, "vault.db"), []vault.Key{key}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()

	err = v.Put(ctx, &vault.Connection{
		Principal: "alice@example.com", Server: "files",
		Token:  oauth2.Token{AccessToken: "at-1", RefreshToken: "rt-1", Expiry: time.Now().Add(-time.Minute)},
		Scopes: "files:read", Issuer: "https://auth.example.com", ClientID: "preflight",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	list, _ := v.List(ctx, "alice@example.com")
	for _, s := range list {
		fmt.Println(s.Server, s.Scopes, s.Status)
	}

	c, err := v.Refresh(ctx, "alice@example.com", "files", time.Minute, func(ctx context.Context, c *vault.Connection) (*oauth2.Token, error) {
		// Here: an oauth2.Config's TokenSource(ctx, &c.Token).Token().
		return &oauth2.Token{AccessToken: "at-2", Expiry: time.Now().Add(time.Hour)}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Token.AccessToken, c.Token.RefreshToken)
	// Output:
	// files files:read connected
	// at-2 rt-1
}
