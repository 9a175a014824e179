// Command preflight shows what MCP tool resolution (tools/resolve) tells a
// client before it calls a tool: the annotations and policy hints of that
// one call, whether it needs the user's confirmation, and whether it is safe
// to retry.
//
//	preflight serve                 # the gateway, on a built-in setup
//	preflight demo                  # the manage_files example, in-process
//	preflight inspect -url URL      # list the tools of a server over HTTP
//	preflight inspect resolve NAME ARGS_JSON -- COMMAND [ARG...]   # over stdio
//	preflight lint CATALOG.json     # check tool metadata, for CI
//	preflight help                  # usage and exit statuses
//
// The implementation is in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/preflightmcp/preflight/gateway/cmd/preflight/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal starts the shutdown, a second one ends
		// the process at once.
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
