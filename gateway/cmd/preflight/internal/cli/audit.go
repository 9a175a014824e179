package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

type auditCmd struct {
	store, config, data                           string
	since, until                                  string
	principal, server, tool, effect, decision, oc string
	limit                                         int
	newest                                        bool
	common
}

func (c *auditCmd) synopsis() string {
	return `usage: preflight audit [-store STORE | -config FILE | -data DIR] [filters] [-format text|jsonl] [-o FILE]

Queries and exports the gateway's audit log: one record per call, with
its time, principal, server, tool, whose grant the requests to an OAuth
upstream carried (signedInAs), effect, the decision and its reason, the
approver, the outcome, the latency, the digest of its arguments (their
values where the level is full, never sensitive ones), what was redacted
(kinds and counts) and the retries. A call whose outcome was never recorded
(the gateway stopped while it ran) shows as unknown.

STORE is sqlite:PATH (the embedded default) or a PostgreSQL URL
(postgres://USER@HOST/DATABASE); it is opened read-only. -config FILE reads
the log that preflight serve -config FILE writes (its audit section, or
preflight/audit.db under the user's state directory when it has none);
-data DIR the log of the built-in setup of preflight serve -data DIR.
Without any of them, it reads the log of the built-in setup on its default
data directory (preflight/serve under the user's cache directory), the
one preflight serve uses without flags. Records come oldest first (-newest
for the latest first); -format text prints one line per record with what
came from clients and servers stripped of control characters, -format
jsonl one JSON object per line (JSON Lines) for other tools.

Exit status: 0 done; 1 the query failed; 2 usage error (also: no store
given and no audit log in the default data directory); 3 the store could
not be opened or the output could not be written.

Examples:

  preflight audit -since 1h
  preflight audit -store sqlite:audit.db -since 1h
  preflight audit -store sqlite:audit.db -effect delete -decision confirm -outcome unknown
  preflight audit -store postgres://preflight@db/preflight -since 7d -format jsonl -o audit.jsonl
`
}

func (c *auditCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.store, "store", "", "the audit store: sqlite:PATH or postgres://USER@HOST/DATABASE")
	fs.StringVar(&c.config, "config", "", "read the audit log of the gateway configured by `FILE`")
	fs.StringVar(&c.data, "data", "", "read the audit log of the built-in setup of preflight serve -data `DIR`")
	fs.StringVar(&c.since, "since", "", "records from this `time` (RFC 3339 or 2006-01-02) or this long ago (90s, 15m, 1h, 7d)")
	fs.StringVar(&c.until, "until", "", "records before this `time` or this long ago")
	fs.StringVar(&c.principal, "principal", "", "records of this principal only")
	fs.StringVar(&c.server, "server", "", "records of this upstream server only")
	fs.StringVar(&c.tool, "tool", "", "records of this tool only")
	fs.StringVar(&c.effect, "effect", "", "records of this effect only: read, write, external or delete")
	fs.StringVar(&c.decision, "decision", "", "records of this decision only: allow, confirm or deny")
	fs.StringVar(&c.oc, "outcome", "", "records of this outcome only: ok, tool_error, error, input_required,\nunknown (also never recorded), denied, declined, timeout, cancelled, quarantined,\nundisclosed or not_connected")
	fs.IntVar(&c.limit, "limit", 0, "at most this many records (0: all)")
	fs.BoolVar(&c.newest, "newest", false, "newest first (with -limit: the latest records)")
	c.bindOutput(fs, []string{"text", "jsonl", "json"}, "json") // json is JSON Lines too
	c.bindTimeout(fs)
}

// filter reads the filter flags.
func (c *auditCmd) filter(now time.Time) (audit.Filter, error) {
	q := url.Values{}
	for key, v := range map[string]string{"since": c.since, "until": c.until, "principal": c.principal,
		"server": c.server, "tool": c.tool, "effect": c.effect, "decision": c.decision, "outcome": c.oc} {
		if v != "" {
			q.Set(key, v)
		}
	}
	if c.limit < 0 {
		return audit.Filter{}, usagef("-limit %d: want 0 (all) or more", c.limit)
	}
	if c.limit > 0 {
		q.Set("limit", strconv.Itoa(c.limit))
	}
	if c.newest {
		q.Set("order", "newest")
	}
	f, err := audit.ParseFilter(q, now)
	if err != nil {
		return audit.Filter{}, usagef("-%v", err)
	}
	return f, nil
}

func (c *auditCmd) run(ctx context.Context, env *env, inv invocation) error {
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("audit takes no arguments (filters are flags: -since 1h -effect delete)")
	}
	spec, err := c.storeSpec()
	if err != nil {
		return err
	}
	write := audit.WriteText
	if c.format != "text" {
		write = audit.WriteJSONL
	}
	f, err := c.filter(time.Now())
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(ctx, spec, &sqlstore.Options{ReadOnly: true})
	if err != nil {
		return couldNotRun(err)
	}
	defer store.Close()
	_, err = write(env.stdout, store.Query(ctx, f))
	return queryError(err)
}

// queryError says why an export stopped: a timeout, or the store failing
// midway.
func queryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return couldNotRun(fmt.Errorf("timed out (-timeout): %w", err))
	}
	return fmt.Errorf("%s", strings.TrimSpace(text.Sanitize(err.Error())))
}

// storeSpec is the store to read: -store, the audit section of -config,
// or the built-in setup's on -data or, without any, on its default data
// directory.
func (c *auditCmd) storeSpec() (string, error) {
	n := 0
	for _, v := range []string{c.store, c.config, c.data} {
		if v != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return "", usagef("give one of -store, -config and -data")
	case c.store != "":
		return c.store, nil
	case c.config != "":
		cfg, err := config.Load(c.config)
		if err != nil {
			return "", couldNotRun(err)
		}
		spec, err := cfg.Audit.StoreSpec(os.LookupEnv)
		if err != nil {
			return "", couldNotRun(fmt.Errorf("-config %s: %w", c.config, err))
		}
		if spec == "" {
			return "", couldNotRun(fmt.Errorf("-config %s: audit.store is off: the gateway keeps no audit log", c.config))
		}
		return spec, nil
	}
	if c.data == "" {
		return defaultAuditStore()
	}
	dir, err := filepath.Abs(c.data)
	if err != nil {
		return "", couldNotRun(err)
	}
	return builtinAuditStore(dir), nil
}

// defaultAuditStore is the audit log of the built-in setup on its default
// data directory, where preflight serve without flags keeps it; a usage
// error says what to do when there is none.
func defaultAuditStore() (string, error) {
	dir, err := defaultDataDir()
	if err != nil {
		return "", usagef("%v", err)
	}
	spec := builtinAuditStore(dir)
	if _, err := os.Stat(strings.TrimPrefix(spec, "sqlite:")); errors.Is(err, os.ErrNotExist) {
		return "", usagef("no audit log in %s, the built-in setup's data directory: start the built-in setup with 'preflight serve' (its calls are logged there), or give -store STORE, -config FILE or -data DIR", dir)
	}
	return spec, nil
}
