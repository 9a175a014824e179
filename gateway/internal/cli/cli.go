// Package cli implements the preflight command: a dispatcher with usage
// text, and one file per subcommand.
//
//   - serve (serve.go) runs the gateway (package gateway) in front of the
//     servers of a configuration file, or of a built-in setup.
//   - demo (demo.go) runs the manage_files example server in-process and
//     walks a client through list, resolve, decide and call for each of its
//     actions, printing a table of what tool resolution changed.
//   - inspect (inspect.go) lists, resolves and calls the tools of any MCP
//     server, over streamable HTTP or a command started over stdio, the way
//     a resolve-before-call client would.
//
// [Main] takes its arguments and output streams as parameters and returns
// the exit status, so tests run the command in-process: 0 when the
// operation succeeded, 1 when it failed (a server error, a refused call), 2
// for a usage error.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand.
type command interface {
	// synopsis returns the usage lines and a description, printed above
	// the flags by "preflight help NAME".
	synopsis() string
	// flags binds the command's flags to fs.
	flags(fs *flag.FlagSet)
	// run runs the command after its flags are parsed.
	run(ctx context.Context, inv invocation, stdout, stderr io.Writer) error
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
	{"demo", "run the manage_files example in-process and show what tool resolution changes", func() command { return &demoCmd{} }},
	{"inspect", "list, resolve and call the tools of any MCP server (HTTP URL or stdio command)", func() command { return &inspectCmd{} }},
	{"lint", "check a server's or a catalog's tool metadata and tool resolution, for CI", func() command { return &lintCmd{} }},
	{"docs", "write safety tables (Markdown or HTML) of a server's or a catalog's tools", func() command { return &docsCmd{} }},
	{"tokens", "count the tokens of a tool catalog today and with progressive disclosure", func() command { return &tokensCmd{} }},
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
Exit status: 0 success, 1 the operation failed, 2 usage error.
`)
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
// writing to stdout and stderr, and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) == 0 {
			usage(stdout)
			return exitOK
		}
		c, ok := lookup(args[0])
		if !ok || len(args) > 1 {
			fmt.Fprintf(stderr, "preflight help: unknown command %q\n\n", strings.Join(args, " "))
			usage(stderr)
			return exitUsage
		}
		commandUsage(stdout, args[0], c)
		return exitOK
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "preflight: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}

	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported below, with the usage
	c.flags(fs)
	inv, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, name, c)
		return exitOK
	}
	if err == nil {
		err = c.run(ctx, inv, stdout, stderr)
	}
	var uerr *usageError
	var xerr *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xerr):
		fmt.Fprintf(stderr, "preflight %s: %v\n", name, xerr.err)
		return xerr.code
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "preflight %s: %s\n\n", name, uerr.msg)
		commandUsage(stderr, name, c)
		return exitUsage
	case errors.Is(err, errReported):
		return exitFailure
	default:
		fmt.Fprintf(stderr, "preflight %s: %v\n", name, err)
		return exitFailure
	}
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

// usageError is a bad command line: the message is printed with the
// command's usage and the exit status is 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errReported is returned by a command that failed and has already said
// why; the exit status is 1.
var errReported = errors.New("failure already reported")
