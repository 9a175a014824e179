package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	approvalsql "github.com/preflightmcp/preflight/gateway/internal/approval/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// A gateway's state directory keeps what belongs to it alone and must
// outlive one run of serve: the calls waiting for approval
// (approvalsFile, unless the configuration names an approvals store),
// the key of the login links `preflight login` mints (loginKeyFile) and
// the address of its page while it serves (pageFile). The built-in
// setup's is its data directory; a configuration file's is its own
// (config.StateDirOf). It is the user's alone (0700).
const (
	approvalsFile = "approvals.db"
	loginKeyFile  = "login.key"
	pageFile      = "page.url"
)

// configStateDir returns the state directory of the configuration file at
// path, creating it.
func configStateDir(path string) (string, error) {
	dir, err := config.StateDirOf(path)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// persistentApprovals makes opts.Approvals keep its requests in dir's
// approvals.db, so that calls waiting for a person, and approvals given,
// survive a restart; Gateway.Close closes the file. admins decide
// anyone's requests.
func persistentApprovals(ctx context.Context, opts *gateway.Options, dir string, admins []string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := approvalsql.Open(ctx, "sqlite:"+filepath.Join(dir, approvalsFile), nil)
	if err != nil {
		return fmt.Errorf("the approvals kept in %s: %w", dir, err)
	}
	opts.Closers = append(opts.Closers, s.Close)
	opts.Stores = append(opts.Stores, setup.SQLCheck("approvals", s))
	opts.Approvals = approval.New(s, &approval.Options{Admins: admins, Logger: logger})
	return nil
}

// The length of a login key: the one made, and the most read.
const (
	keySize    = 32
	maxKeySize = 1024
)

// loginKey returns the key of dir's login links, making it on first use:
// written whole to a file of its own, then linked into place, so that a
// gateway starting at the same time reads either no key or the whole of
// the one that won.
func loginKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, loginKeyFile)
	if key, err := readLoginKey(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	tmp, err := os.CreateTemp(dir, loginKeyFile+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, keySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return readLoginKey(p)
}

// readLoginKey reads a login key, which must be the user's alone: a key
// others could read, or plant, would let them sign in.
func readLoginKey(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if err := ownedPrivately(fi); err != nil {
		return nil, fmt.Errorf("login key %s: %w; remove it, and the gateway makes a new one when it starts", p, err)
	}
	key, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(key) < keySize || len(key) > maxKeySize {
		return nil, fmt.Errorf("login key %s: %d bytes, not %d to %d; remove it, and the gateway makes a new one when it starts", p, len(key), keySize, maxKeySize)
	}
	return key, nil
}

// writePageURL records where the page of the gateway on dir is, and
// returns the function that removes the record when the gateway stops
// (unless another gateway on dir recorded its own meanwhile).
func writePageURL(dir, url string) (remove func(), err error) {
	tmp, err := os.CreateTemp(dir, pageFile+".*")
	if err != nil {
		return nil, err
	}
	if _, err := tmp.WriteString(url + "\n"); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	p := filepath.Join(dir, pageFile)
	if err := os.Rename(tmp.Name(), p); err != nil {
		return nil, err
	}
	return func() {
		if got, err := readPageURL(dir); err == nil && got == url {
			os.Remove(p)
		}
	}, nil
}

// readPageURL returns where the page of the gateway on dir is.
func readPageURL(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, pageFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
