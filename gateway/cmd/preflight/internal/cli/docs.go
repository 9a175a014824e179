package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

type docsCmd struct {
	common
	server      serverFlags
	maxVariants int
	title       string
}

func (c *docsCmd) synopsis() string {
	return `usage: preflight docs [flags] CATALOG.json
       preflight docs [flags] -url URL
       preflight docs [flags] -- COMMAND [ARG...]

Writes a safety table of a server's tools, captured in a catalog file or
running (-url, or a command started once over stdio after --): per tool,
and for each resolvable tool per argument variant as tools/resolve answers
it (values enumerated from the input schema, as lint does), the effect,
read-only, destructive, idempotent, open world, confirmation and result
sensitivity of a call, each with where the value came from (resolved,
static, derived, default). A server that discloses its tools progressively
is described from the full definitions of its tool_descriptions resource.

-format markdown (the default) writes a table for a README; -format html
writes one self-contained page (no external assets) with colour for risk
and filters, whose URL fragment keeps the filters (#risk=destructive);
-format json writes the table as data.

Exit status: 0 written; 2 usage error; 3 the target could not be read (an
unreadable or empty catalog; the server could not be started or reached,
or its handshake or tools/list failed; -timeout) or the output could not
be written.

Examples:

  preflight docs testdata/catalogs/github-all.json > SAFETY.md
  preflight docs -format html -o safety.html -- go run ./examples/files -root DIR
`
}

func (c *docsCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"markdown", "html", "json"}, "json")
	c.server.bind(fs)
	c.bindTimeout(fs)
	fs.IntVar(&c.maxVariants, "max-variants", lint.DefaultMaxVariants, "at most this many argument variants resolved per tool")
	fs.StringVar(&c.title, "title", "", "title of the table (default: the server's name and version, or the catalog file)")
}

func (c *docsCmd) run(ctx context.Context, env *env, inv invocation) error {
	if err := c.server.check(inv, 1); err != nil {
		return err
	}
	if c.maxVariants < 1 {
		return usagef("-max-variants must be at least 1")
	}
	t, err := c.server.observe(ctx, env, inv, &lint.ProbeOptions{MaxVariants: c.maxVariants})
	if err != nil {
		return err
	}
	tb := safety.FromTarget(t)
	if c.title != "" {
		tb.Title = c.title
	}
	switch c.format {
	case "html":
		err = tb.HTML(env.stdout)
	case "json":
		err = writeJSON(env.stdout, tb)
	default:
		err = tb.Markdown(env.stdout)
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("writing the table: %w", err))
	}
	return nil
}
