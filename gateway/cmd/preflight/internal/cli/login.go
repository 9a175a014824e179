package cli

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/page"
)

// loginTTL is how long a link of preflight login stays good.
const loginTTL = 15 * time.Minute

type loginCmd struct {
	data, config string
	common
}

func (c *loginCmd) synopsis() string {
	return `usage: preflight login [-config FILE | -data DIR] [-json]

Prints a fresh one-time link that signs you in to the approval page of
the gateway running on this machine: after signing out, in another
browser, or when the link serve printed is spent or lost (a desktop client
that starts the gateway keeps its standard error in a log file). The link
signs in once, within 15 minutes, on the page's loopback address.

Without -config or -data it finds the gateway started last, from a
configuration file or the built-in setup, that still serves its page;
-config FILE names the gateway of that configuration, -data DIR the
built-in setup started with preflight serve -data DIR. The link goes only
to a page that proves it holds the gateway's key (kept in the gateway's
state directory, the user's alone), never to whatever else may listen on
a stopped gateway's port.

Exit status: 0 done; 2 usage error; 3 no gateway's page answers.

Example:

  preflight login
`
}

func (c *loginCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "the configuration `FILE` of the gateway (default: the gateway started last)")
	fs.StringVar(&c.data, "data", "", "data `DIR` of the built-in setup (default: the gateway started last)")
	c.bindOutput(fs, []string{"text", "json"}, "json") // json: {"page", "link", "expires"}
	c.bindTimeout(fs)
}

func (c *loginCmd) run(ctx context.Context, env *env, inv invocation) error {
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("login takes no arguments")
	}
	if c.config != "" && c.data != "" {
		return usagef("give -config or -data, not both")
	}
	dirs, err := c.stateDirs()
	if err != nil {
		return couldNotRun(err)
	}
	for _, dir := range dirs {
		pageURL, err := readPageURL(dir)
		if err != nil {
			continue
		}
		key, err := readLoginKey(filepath.Join(dir, loginKeyFile))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return couldNotRun(err)
		}
		if !holdsKey(ctx, pageURL, key) {
			continue
		}
		link, err := page.SignedLink(pageURL, key, loginTTL)
		if err != nil {
			return couldNotRun(err)
		}
		if c.format == "json" {
			return writeJSON(env.stdout, struct {
				Page    string    `json:"page"`
				Link    string    `json:"link"`
				Expires time.Time `json:"expires"`
			}{pageURL + "/", link, time.Now().Add(loginTTL).UTC().Truncate(time.Second)})
		}
		_, err = fmt.Fprintf(env.stdout, "Sign in to the approval page at %s/ with this link (once, within %v):\n  %s\n", pageURL, loginTTL, link)
		return err
	}
	return couldNotRun(fmt.Errorf("no gateway's approval page answers (looked in %s): start one with preflight serve", strings.Join(dirs, ", ")))
}

// stateDirs returns the state directories to look in, the one whose
// gateway started last first.
func (c *loginCmd) stateDirs() ([]string, error) {
	switch {
	case c.data != "":
		dir, err := filepath.Abs(c.data)
		return []string{dir}, err
	case c.config != "":
		dir, err := config.StateDirOf(c.config)
		return []string{dir}, err
	}
	var dirs []string
	if root, err := config.DefaultStateDir(); err == nil {
		found, _ := filepath.Glob(filepath.Join(root, "gateways", "*", pageFile))
		for _, f := range found {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	if dir, err := defaultDataDir(); err == nil {
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil, errors.New("neither a state nor a cache directory: give -config FILE or -data DIR")
	}
	started := func(dir string) time.Time {
		fi, err := os.Stat(filepath.Join(dir, pageFile))
		if err != nil {
			return time.Time{}
		}
		return fi.ModTime()
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return started(b).Compare(started(a)) })
	return dirs, nil
}

// holdsKey reports whether the page at pageURL answers a fresh challenge
// with the proof only a holder of key can give.
func holdsKey(ctx context.Context, pageURL string, key []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	challenge := rand.Text()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL+"/login?"+url.Values{"challenge": {challenge}}.Encode(), nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	proof, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	return err == nil && resp.StatusCode == http.StatusOK &&
		hmac.Equal(proof, []byte(page.KeyProof(key, challenge)))
}
