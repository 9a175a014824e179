// Package cli implements the preflight command: a dispatcher with usage
// text, one file per subcommand (serve.go, demo.go, inspect.go, lint.go,
// docs.go, tokens.go, audit.go, token.go) and the helpers they share
// (shared.go).
//
// Every command follows one convention: catalog files are positional
// arguments, a server is -url URL or a command after "--", -format chooses
// the output (-json is short for -format json), -o writes it to a file,
// -timeout bounds the whole run of a command that talks to a server, text
// output never carries a server's control characters, and the exit status
// means the same everywhere (see [Main]).
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Exit statuses, the same for every command.
const (
	// exitOK: done; for lint, no finding at or above -severity.
	exitOK = 0
	// exitFailure: findings at or above -severity (lint), or the
	// operation failed (a server error, a tool error, a refused call).
	exitFailure = 1
	// exitUsage: bad flags or arguments.
	exitUsage = 2
	// exitCouldNotRun: the command could not do its job: the server could
	// not be started or reached (connection, TLS, handshake), a catalog or
	// the gateway's configuration file could not be read, the output could
	// not be written, the run timed out or was interrupted.
	exitCouldNotRun = 3
)

// exitStatusText documents the exit statuses in "preflight help".
const exitStatusText = `Exit status, the same for every command:

	0  done (lint: no finding at or above -severity)
	1  findings at or above -severity (lint), or the operation failed:
	   a server error, a tool error, a refused call (inspect)
	2  usage error: bad flags or arguments
	3  could not run: the server could not be started or reached
	   (connection refused, no such host, TLS handshake, the handshake
	   or tools/list failed), a catalog or the gateway's configuration
	   file could not be read (missing, unreadable or not valid), the
	   output could not be written, the run timed out (-timeout) or was
	   interrupted
`

// command is one subcommand.
type command interface {
	// synopsis returns the usage lines and a description, printed above
	// the flags by "preflight help NAME".
	synopsis() string
	// flags binds the command's flags to fs.
	flags(fs *flag.FlagSet)
	// run runs the command after its flags are parsed.
	run(ctx context.Context, env *env, inv invocation) error
	// conventions returns the flags every command shares.
	conventions() *common
}

// env is where a command reads and writes. stdout and stderr strip
// control characters from text (see [termWriter]); stderr may be written
// from several goroutines (a started server logs to it).
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr *termWriter
}

// invocation is a command line after flag parsing.
type invocation struct {
	// args are the positional arguments before any "--".
	args []string
	// dashDash reports whether the command line had a "--".
	dashDash bool
	// rest are the arguments after the first "--".
	rest []string
}

// commandInfo names a subcommand and makes a fresh instance of it.
type commandInfo struct {
	name, summary string
	new           func() command
}

// commands lists the subcommands in the order the usage text shows them.
var commands = []commandInfo{
	{"serve", "run the gateway: one MCP endpoint in front of many servers, with tools/resolve for every tool", func() command { return &serveCmd{} }},
	{"connect", "put the gateway in front of the servers of Claude, Cursor, VS Code, Codex, Gemini CLI or Windsurf", func() command { return &connectCmd{} }},
	{"demo", "run the manage_files example in-process and show what tool resolution changes", func() command { return &demoCmd{} }},
	{"inspect", "list, resolve and call the tools of any MCP server, read its resources, answer its questions", func() command { return &inspectCmd{} }},
	{"lint", "check a server's or a catalog's tool metadata and tool resolution, for CI", func() command { return &lintCmd{} }},
	{"docs", "write safety tables (Markdown, HTML or JSON) of a server's or a catalog's tools", func() command { return &docsCmd{} }},
	{"tokens", "count the tokens of a tool catalog today and with progressive disclosure", func() command { return &tokensCmd{} }},
	{"audit", "query and export the gateway's audit log (SQLite or PostgreSQL), by time, principal, effect, decision", func() command { return &auditCmd{} }},
	{"token", "make a bearer token for a client of the gateway, and the config entry that accepts it", func() command { return &tokenCmd{} }},
	{"pins", "list, show and approve the gateway's pinned tool definitions", func() command { return &pinsCmd{} }},
	{"vault", "seal the tokens of the servers the gateway signs in to again, under the vault's first key", func() command { return &vaultCmd{} }},
	{"login", "print a fresh one-time link to the approval page of the gateway running here", func() command { return &loginCmd{} }},
	{"version", "print the version, the commit and the Go version preflight was built with", func() command { return &versionCmd{} }},
}

func lookup(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c commandInfo) bool { return c.name == name })
	if i < 0 {
		return nil, false
	}
	return commands[i].new(), true
}

// usage writes the top-level usage text.
func usage(w io.Writer) {
	fmt.Fprint(w, `preflight shows what MCP tool resolution (tools/resolve) tells a client
before it calls a tool: the annotations and policy hints of that one call,
whether it needs the user's confirmation, and whether it is safe to retry.

Usage:

	preflight <command> [flags] [arguments]

Commands:

`)
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-8s  %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\t%-8s  %s\n", "help", "show this text, or a command's flags: preflight help inspect")
	fmt.Fprint(w, `
The commands share one convention:

	CATALOG.json    a catalog file is a positional argument (lint, docs,
	                tokens): a tools/list result, a JSON-RPC response
	                holding one, or an array of tools; an empty one is
	                an error
	-url URL        a server over streamable HTTP, with -header for
	                credentials and -era for the protocol version
	-- COMMAND ...  a server started over stdio, once per run
	-format F       the output format; -json is short for -format json
	-o FILE         write the output to FILE instead of standard output
	-timeout D      give up after D, the whole run included

Text output strips control characters, escape sequences and
bidirectional overrides from everything a server says (names,
descriptions, results, errors, its log lines): a server cannot redraw
what the command prints. JSON output keeps them, escaped.

`)
	fmt.Fprint(w, exitStatusText)
}

// commandUsage writes the usage text of one command, flags included.
func commandUsage(w io.Writer, name string, c command) {
	fmt.Fprint(w, c.synopsis())
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c.flags(fs)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// Main runs the preflight command with args (without the program name),
// reading answers from stdin and writing to stdout and stderr, and
// returns the exit status: 0 done, 1 findings or the operation failed, 2
// usage error, 3 could not run (see exitStatusText).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	errw := newTermWriter(stderr, textOutput)
	defer errw.Flush()
	if len(args) == 0 {
		usage(errw)
		return exitUsage
	}
	name, args := args[0], args[1:]
	switch name {
	case "-version", "--version":
		name = "version"
	case "help", "-h", "-help", "--help":
		outw := newTermWriter(stdout, textOutput)
		defer outw.Flush()
		if len(args) == 0 {
			usage(outw)
			return exitOK
		}
		c, ok := lookup(args[0])
		if !ok || len(args) > 1 {
			fmt.Fprintf(errw, "preflight help: unknown command %q\nRun 'preflight help' for the commands.\n", strings.Join(args, " "))
			return exitUsage
		}
		commandUsage(outw, args[0], c)
		return exitOK
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(errw, "preflight: unknown command %q\nRun 'preflight help' for the commands.\n", name)
		return exitUsage
	}

	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported below
	c.flags(fs)
	inv, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		outw := newTermWriter(stdout, textOutput)
		defer outw.Flush()
		commandUsage(outw, name, c)
		return exitOK
	}
	cm := c.conventions()
	if err == nil {
		err = cm.check()
	}
	if err != nil {
		return report(errw, name, err)
	}

	// The output: standard output, or a buffer for -o; JSON is escaped
	// rather than stripped, so that it keeps its values.
	var file bytes.Buffer
	var out io.Writer = stdout
	if cm.output != "" {
		out = &file
	}
	mode := textOutput
	if cm.format == "json" || cm.format == "jsonl" || cm.format == "sarif" {
		mode = jsonOutput
	}
	outw := newTermWriter(out, mode)

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if cm.timed && cm.timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cm.timeout)
	}
	err = c.run(runCtx, &env{stdin: stdin, stdout: outw, stderr: errw}, inv)
	cancel()
	if ferr := outw.Flush(); ferr != nil && err == nil {
		err = couldNotRun(fmt.Errorf("writing the output: %w", ferr))
	}
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		err = couldNotRun(fmt.Errorf("timed out after %v (-timeout)", cm.timeout))
	case ctx.Err() != nil && !cm.untilStopped:
		err = couldNotRun(errors.New("interrupted"))
	}
	code := report(errw, name, err)
	if cm.output != "" && (err == nil || file.Len() > 0) {
		if werr := os.WriteFile(cm.output, file.Bytes(), 0o644); werr != nil {
			fmt.Fprintf(errw, "preflight %s: writing the output: %v\n", name, werr)
			return exitCouldNotRun
		}
		fmt.Fprintf(errw, "preflight %s: wrote %s\n", name, cm.output)
	}
	return code
}

// report prints err, if any, and returns the exit status it means.
func report(w io.Writer, name string, err error) int {
	var uerr *usageError
	var xerr *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &uerr):
		fmt.Fprintf(w, "preflight %s: %s\nRun 'preflight help %s' for usage.\n", name, uerr.msg, name)
		return exitUsage
	case errors.Is(err, errReported):
		return exitFailure
	case errors.As(err, &xerr):
		fmt.Fprintf(w, "preflight %s: %v\n", name, xerr.err)
		return xerr.code
	}
	fmt.Fprintf(w, "preflight %s: %v\n", name, err)
	return exitFailure
}

// parse parses flags anywhere before the first "--", so that both
// "inspect -json list" and "inspect list -json" work, and returns the
// positional arguments and those after "--".
func parse(fs *flag.FlagSet, args []string) (invocation, error) {
	var inv invocation
	if i := slices.Index(args, "--"); i >= 0 {
		inv.dashDash, inv.rest = true, args[i+1:]
		args = args[:i]
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return inv, err
			}
			return inv, &usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return inv, nil
		}
		inv.args = append(inv.args, args[0])
		args = args[1:]
	}
}

// common holds the flags every command shares: the output format and
// file and, for a command that talks to a server, the time limit.
type common struct {
	// formats are the formats the command writes; the first is the
	// default.
	formats []string
	format  string
	// formatFlag is the flag that chose format, "" for the default.
	formatFlag string
	output     string
	// timed reports that the command has -timeout.
	timed   bool
	timeout time.Duration
	// untilStopped reports a command that runs until it is interrupted
	// (serve): an interrupt is how it ends, not a failure.
	untilStopped bool
}

func (c *common) conventions() *common { return c }

// bindOutput registers -format (one of formats, the first by default),
// -o, and for each of aliases a boolean flag -NAME short for -format NAME.
func (c *common) bindOutput(fs *flag.FlagSet, formats []string, aliases ...string) {
	c.formats, c.format = formats, formats[0]
	fs.Func("format", fmt.Sprintf("output `format`: %s (default %s)", wordList(formats, "or"), formats[0]), func(v string) error {
		return c.setFormat("-format", v)
	})
	for _, a := range aliases {
		fs.BoolFunc(a, "short for -format "+a, func(v string) error {
			if v == "false" {
				return nil
			}
			return c.setFormat("-"+a, a)
		})
	}
	fs.StringVar(&c.output, "o", "", "write the output to `file` instead of standard output")
}

func (c *common) setFormat(flagName, v string) error {
	if !slices.Contains(c.formats, v) {
		return fmt.Errorf("want %s", wordList(c.formats, "or"))
	}
	if c.formatFlag != "" && c.format != v {
		earlier := c.formatFlag
		if earlier == "-format" {
			earlier += " " + c.format
		}
		return fmt.Errorf("conflicts with %s: give one output format", earlier)
	}
	c.format, c.formatFlag = v, flagName
	return nil
}

// bindTimeout registers -timeout.
func (c *common) bindTimeout(fs *flag.FlagSet) {
	c.timed = true
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute,
		"give up after this long, the whole run included (starting the server, every request, questions answered); 0 waits forever")
}

// check reports bad shared flags.
func (c *common) check() error {
	if c.timeout < 0 {
		return usagef("-timeout %v: want a duration of 0 or more", c.timeout)
	}
	return nil
}

// wordList joins words as "a, b or c".
func wordList(words []string, and string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + and + " " + words[len(words)-1]
}

// usageError is a bad command line: the message is printed with a
// pointer to the command's help and the exit status is 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errReported is returned by a command that failed and has already said
// why; the exit status is 1.
var errReported = errors.New("failure already reported")

// exitError ends a command with a given exit status after printing err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// couldNotRun marks err as a reason the command could not run (exit 3).
func couldNotRun(err error) error {
	var xerr *exitError
	if errors.As(err, &xerr) && xerr.code == exitCouldNotRun {
		return err
	}
	return &exitError{exitCouldNotRun, err}
}
