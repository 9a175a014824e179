package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/safety"
)

type docsCmd struct {
	target targetFlags
	format string
	out    string
	title  string
}

func (c *docsCmd) synopsis() string {
	return `usage: preflight docs [flags] -url URL
       preflight docs [flags] -catalog FILE
       preflight docs [flags] -- COMMAND [ARG...]

Writes a safety table of a server's tools, running (-url, or a command
started over stdio after --) or captured in a catalog file (-catalog): per
tool, and for each resolvable tool per argument variant as tools/resolve
answers it (values enumerated from the input schema, as lint does), the
effect, read-only, destructive, idempotent, open world, confirmation and
result sensitivity of a call, each with where the value came from
(resolved, static, derived, default).

-format markdown (the default) writes a table for a README; -format html
writes one self-contained page (no external assets) with colour for risk
and filters, whose URL fragment keeps the filters (#risk=destructive).

Exit status: 0 written; 1 the output could not be written; 2 usage error;
3 the target could not be read (connection, handshake or tools/list
failed, unreadable catalog).

Examples:

  preflight docs -catalog testdata/catalogs/github-all.json > SAFETY.md
  preflight docs -format html -o safety.html -- go run ./examples/files -root DIR
`
}

func (c *docsCmd) flags(fs *flag.FlagSet) {
	c.target.bind(fs)
	fs.StringVar(&c.format, "format", "markdown", "output: markdown or html")
	fs.StringVar(&c.out, "o", "", "write to `file` instead of standard output")
	fs.StringVar(&c.title, "title", "", "title of the table (default: the server's name and version, or the catalog file)")
}

func (c *docsCmd) run(ctx context.Context, inv invocation, stdout, stderr io.Writer) error {
	if c.format != "markdown" && c.format != "html" {
		return usagef("-format %q: want markdown or html", c.format)
	}
	if err := c.target.check(inv); err != nil {
		return err
	}
	t, err := c.target.observe(ctx, inv, &lint.ProbeOptions{}, stderr)
	if err != nil {
		return err
	}
	tb := safety.FromTarget(t)
	if c.title != "" {
		tb.Title = c.title
	}
	var buf bytes.Buffer
	if c.format == "html" {
		err = tb.HTML(&buf)
	} else {
		err = tb.Markdown(&buf)
	}
	if err != nil {
		return err
	}
	if c.out == "" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(c.out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "preflight docs: wrote %s (%d tools)\n", c.out, len(tb.Tools))
	return nil
}
