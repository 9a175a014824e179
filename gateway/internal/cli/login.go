package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
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
	data string
	common
}

func (c *loginCmd) synopsis() string {
	return `usage: preflight login [-data DIR] [-json]

Prints a fresh one-time link that signs you in to the approval page of
the gateway running on this machine: after signing out, in another
browser, or when the link serve printed is spent or lost (a desktop client
that starts the gateway keeps its standard error in a log file). The link
signs in once, within 15 minutes, on the loopback address only.

Without -data it finds the gateway started last, from a configuration file
(its state is in the user's state directory) or the built-in setup (in its
default data directory), that still answers; -data DIR names the data
directory of a built-in setup started with preflight serve -data DIR.

Exit status: 0 done; 2 usage error; 3 no gateway's page answers.

Example:

  preflight login
`
}

func (c *loginCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.data, "data", "", "data `DIR` of the built-in setup (default: the last gateway started)")
	c.bindOutput(fs, []string{"text", "json"}, "json") // json: {"page", "link", "expires"}
	c.bindTimeout(fs)
}

func (c *loginCmd) run(ctx context.Context, env *env, inv invocation) error {
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("login takes no arguments")
	}
	dirs, err := c.stateDirs()
	if err != nil {
		return couldNotRun(err)
	}
	for _, dir := range dirs {
		pageURL, err := readPageURL(dir)
		if err != nil || !answers(ctx, pageURL) {
			continue
		}
		key, err := readLoginKey(filepath.Join(dir, loginKeyFile))
		if err != nil {
			return couldNotRun(err)
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
	return couldNotRun(fmt.Errorf("no gateway's approval page answers (looked in %s): start one with preflight serve", strings.Join(dirs, " and ")))
}

// stateDirs returns the state directories to look in, the one a gateway
// started from last first.
func (c *loginCmd) stateDirs() ([]string, error) {
	if c.data != "" {
		dir, err := filepath.Abs(c.data)
		return []string{dir}, err
	}
	var dirs []string
	if dir, err := config.DefaultStateDir(); err == nil {
		dirs = append(dirs, dir)
	}
	if dir, err := defaultDataDir(); err == nil {
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil, errors.New("neither a state nor a cache directory: give -data DIR")
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

// answers reports whether the page at pageURL answers its sign-in.
func answers(ctx context.Context, pageURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL+"/login", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
