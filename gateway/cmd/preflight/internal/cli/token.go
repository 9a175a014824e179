package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/auth"
)

// minImportedToken is the least length of a token -env hashes: an
// unsalted hash is safe only for a long random token.
const minImportedToken = 32

type tokenCmd struct {
	principal string
	env       string
	common
}

func (c *tokenCmd) synopsis() string {
	return `usage: preflight token -principal NAME [-json]
       preflight token -principal NAME -env VARIABLE [-json]

Makes a bearer token for a client of the gateway, and the entry of
auth.tokens that accepts it as NAME. The token is printed once and stored
nowhere: give it to the client (it sends "Authorization: Bearer TOKEN"),
and put the entry, which holds only the token's SHA-256, in the gateway's
config. -env hashes a token you already have, read from an environment
variable, instead of making one; it must be random and at least 32
characters long.

(To count the tokens of a tool catalog, use preflight tokens.)

Exit status: 0 done; 1 the token could not be made or read; 2 usage error.

Example:

  preflight token -principal ci-bot
`
}

func (c *tokenCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.principal, "principal", "", "who presents the token: the name decisions, approvals and the audit use")
	fs.StringVar(&c.env, "env", "", "hash the token in this environment variable instead of making one")
	c.bindOutput(fs, []string{"text", "json"}, "json") // json: {"token", "principal", "sha256"}
	c.bindTimeout(fs)
}

func (c *tokenCmd) run(_ context.Context, env *env, inv invocation) error {
	stdout := env.stdout
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("token takes no arguments (to count a catalog's tokens, use preflight tokens)")
	}
	if c.principal == "" {
		return usagef("-principal is required")
	}
	var token string
	var entry auth.Token
	if c.env != "" {
		v, ok := os.LookupEnv(c.env)
		switch {
		case !ok:
			return fmt.Errorf("environment variable %s is not set", c.env)
		case len(v) < minImportedToken || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }):
			return fmt.Errorf("the token in %s is not at least %d printable characters without spaces: make one with preflight token", c.env, minImportedToken)
		}
		var err error
		if entry, err = auth.NewEntry(c.principal, v); err != nil {
			return usagef("-principal: %v", strings.TrimPrefix(err.Error(), "auth: "))
		}
	} else {
		var err error
		if token, entry, err = auth.NewToken(c.principal); err != nil {
			return usagef("-principal: %v", strings.TrimPrefix(err.Error(), "auth: "))
		}
	}
	if c.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Token     string `json:"token,omitempty"`
			Principal string `json:"principal"`
			SHA256    string `json:"sha256"`
		}{token, entry.Principal, entry.SHA256})
	}
	if token != "" {
		fmt.Fprintf(stdout, "# The token, for %s's client to send as \"Authorization: Bearer <token>\".\n", entry.Principal)
		fmt.Fprintln(stdout, "# It is shown once and stored nowhere: keep it in the client's secret store.")
		fmt.Fprintln(stdout, token)
	}
	fmt.Fprintln(stdout, "# The entry that accepts it, for auth.tokens in the gateway's config:")
	fmt.Fprintf(stdout, "- {principal: %s, sha256: %q}\n", strconv.Quote(entry.Principal), entry.SHA256)
	return nil
}
