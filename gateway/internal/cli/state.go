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
)

// A gateway's state directory keeps what must outlive one run of serve:
// the calls waiting for approval (approvalsFile, unless the configuration
// names an approvals store), the key of the login links `preflight login`
// mints (loginKeyFile) and the address of the last page served
// (pageFile). The built-in setup's is its data directory; a configuration
// file's is the user's state directory (config.DefaultStateDir), where
// its default pins and audit log are too.
const (
	approvalsFile = "approvals.db"
	loginKeyFile  = "login.key"
	pageFile      = "page.url"
)

// configStateDir returns the state directory of configuration files,
// creating it.
func configStateDir() (string, error) {
	dir, err := config.DefaultStateDir()
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
	s, err := approvalsql.OpenSQLite(ctx, filepath.Join(dir, approvalsFile), nil)
	if err != nil {
		return fmt.Errorf("the approvals kept in %s: %w", dir, err)
	}
	opts.Closers = append(opts.Closers, s.Close)
	opts.Approvals = approval.New(s, &approval.Options{Admins: admins, Logger: logger})
	return nil
}

// loginKey returns the key of dir's login links, making it on first use.
func loginKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, loginKeyFile)
	if key, err := readLoginKey(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key := []byte(rand.Text() + rand.Text())
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another gateway made it meanwhile
		return readLoginKey(p)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

func readLoginKey(p string) ([]byte, error) {
	key, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("login key %s: too short; remove it and restart the gateway", p)
	}
	return key, nil
}

// writePageURL records where the page of the gateway on dir is.
func writePageURL(dir, url string) error {
	tmp, err := os.CreateTemp(dir, pageFile+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(url + "\n"); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, pageFile))
}

// readPageURL returns where the page of the last gateway on dir was.
func readPageURL(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, pageFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
