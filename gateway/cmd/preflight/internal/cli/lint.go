package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/preflightmcp/preflight/lint"
)

type lintCmd struct {
	common
	server      serverFlags
	maxVariants int
	severity    string
	config      string
	listChecks  bool
}

func (c *lintCmd) synopsis() string {
	return `usage: preflight lint [flags] CATALOG.json
       preflight lint [flags] -url URL
       preflight lint [flags] -- COMMAND [ARG...]

Checks the tool metadata of an MCP server, captured in a catalog file (a
tools/list result, a JSON-RPC response holding one, or an array of tools)
or running (over streamable HTTP with -url, or a command started once over
stdio after --): names, descriptions, input schemas, annotations, the
mcp.dev/ policy hints, and, on a running server, tool resolution. For each
tool marked resolvable, lint sends tools/resolve with argument values
enumerated from the input schema (enums, consts, booleans, examples,
defaults; placeholders that fit the type for the rest), in each shape the
tool is marked for, each request twice, plus arguments that break the
schema and a tool that does not exist. It never calls a tool.

A server that discloses its tools progressively (a minimal tools/list and
the tool_descriptions resource) is checked on the full definitions it
serves there; reading them authorizes the tools in the server's disclosure
scope, as any client's read does. Both shapes of tools/resolve are probed
on one connection under 2026-07-28; a 2025-11-25 server is probed in the
seed shape over a second HTTP session, and not at all over stdio (a
command is started once).

Every finding names its check, its severity and the fix; "preflight lint
-list-checks" prints them all. A configuration file (-config, JSON) silences
a check for a tool, with a reason:

  {"ignore": [{"check": "no-annotations", "tool": "rename_folder",
               "reason": "asks the user for the name and to confirm"}]}

Exit status: 0 no finding at or above -severity; 1 findings at or above
-severity; 2 usage error (bad flags or configuration); 3 the target could
not be checked (an unreadable or empty catalog; the server could not be
started or reached, or its handshake or tools/list failed; -timeout).

Examples:

  preflight lint testdata/catalogs/github-all.json -config lint.json
  preflight lint -url http://127.0.0.1:8080/mcp
  preflight lint -format sarif -o lint.sarif -- go run ./examples/files -root DIR -disclose
`
}

func (c *lintCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json", "sarif"}, "json")
	c.server.bind(fs)
	c.bindTimeout(fs)
	fs.IntVar(&c.maxVariants, "max-variants", lint.DefaultMaxVariants, "at most this many argument variants resolved per tool")
	fs.StringVar(&c.severity, "severity", "error", "fail (exit 1) on findings at or above this severity: error, warning or info")
	fs.StringVar(&c.config, "config", "", "configuration `file` (JSON) whose ignore entries silence a check for a tool, with a reason")
	fs.BoolVar(&c.listChecks, "list-checks", false, "print the checks (id, severity, explanation, fix) and exit; with -format json, as JSON")
}

func (c *lintCmd) run(ctx context.Context, env *env, inv invocation) error {
	if c.listChecks {
		if c.format == "sarif" {
			return usagef("-list-checks writes text or json, not sarif")
		}
		return writeChecks(env.stdout, c.format)
	}
	min, err := lint.ParseSeverity(c.severity)
	if err != nil {
		return usagef("-severity: %v", err)
	}
	var cfg *lint.Config
	if c.config != "" {
		if cfg, err = lint.LoadConfig(c.config); err != nil {
			return usagef("-config: %v", err)
		}
	}
	if err := c.server.check(inv, 1); err != nil {
		return err
	}
	if c.maxVariants < 1 {
		return usagef("-max-variants must be at least 1")
	}
	t, err := c.server.observe(ctx, env, inv, &lint.ProbeOptions{MaxVariants: c.maxVariants, Determinism: true, Invalid: true})
	if err != nil {
		return err
	}
	r := lint.Run(t, cfg)
	switch c.format {
	case "json":
		err = r.WriteJSON(env.stdout, min)
	case "sarif":
		err = r.WriteSARIF(env.stdout, version)
	default:
		err = r.WriteText(env.stdout, min)
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("writing the report: %w", err))
	}
	if r.Count(min) > 0 {
		return errReported
	}
	return nil
}

// writeChecks prints the checks.
func writeChecks(w io.Writer, format string) error {
	if format == "json" {
		return writeJSON(w, lint.Checks)
	}
	for _, c := range lint.Checks {
		scope := "tools/list"
		if c.Live {
			scope = "running server"
		}
		fmt.Fprintf(w, "%s (%s, %s)\n  %s\n  fix: %s\n", c.ID, c.Severity, scope, c.Explanation, c.Fix)
	}
	return nil
}
