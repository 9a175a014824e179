package setup

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// upstreamOAuth is how the gateway signs in to s, nil unless auth: oauth.
func upstreamOAuth(s *config.Server) *gateway.UpstreamOAuth {
	if s.Auth != config.ServerAuthOAuth {
		return nil
	}
	o := s.OAuth
	return &gateway.UpstreamOAuth{Shared: o.Shared, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		Issuer: o.Issuer, Scopes: slices.Clone(o.Scopes), ClientMetadataURL: o.ClientMetadataURL}
}

// signsIn reports whether a server of cfg signs in with OAuth.
func signsIn(cfg *config.Config) bool {
	for _, s := range cfg.Servers {
		if s != nil && s.Auth == config.ServerAuthOAuth {
			return true
		}
	}
	return false
}

// OpenVault opens the token vault of a configuration's vault section, with
// its keys, or, when it names none, the key kept beside the SQLite file
// (made on first use, readable by its owner only).
func OpenVault(ctx context.Context, c config.Vault) (*vault.Vault, error) {
	spec, err := c.Spec()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	keys := c.Keys
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("configuration: vault.path: %w", err)
		}
		if len(keys) == 0 {
			k, err := localVaultKey(filepath.Join(filepath.Dir(path), config.DefaultVaultKeyFile))
			if err != nil {
				return nil, fmt.Errorf("configuration: vault: %w", err)
			}
			keys = []vault.Key{k}
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("configuration: vault: no keys (set vault.keysEnv or vault.keysFile)")
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	v, err := vault.Open(ctx, spec, keys, nil)
	if err != nil {
		return nil, fmt.Errorf("configuration: vault: %w", err)
	}
	return v, nil
}

// localVaultKey reads the vault key at path, or makes it.
func localVaultKey(path string) (vault.Key, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err := vault.GenerateKey()
		if err != nil {
			return vault.Key{}, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return localVaultKey(path) // made meanwhile by another process
		}
		if err != nil {
			return vault.Key{}, err
		}
		_, werr := f.WriteString(k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret) + "\n")
		if err := errors.Join(werr, f.Close()); err != nil {
			return vault.Key{}, err
		}
		return k, nil
	}
	if err != nil {
		return vault.Key{}, err
	}
	keys, err := config.ParseRequestStateKeys(string(data))
	if err != nil || len(keys) != 1 {
		return vault.Key{}, fmt.Errorf("%s: not one key (%v)", path, err)
	}
	return keys[0], nil
}
