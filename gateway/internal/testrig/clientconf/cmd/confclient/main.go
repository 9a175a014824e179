// Command confclient is the client the conformance suite's client leg runs
// (conformance.RunClient): `confclient -preflight BIN SERVER-URL` starts
// the gateway BIN in front of SERVER-URL and plays the scenario named by
// MCP_CONFORMANCE_SCENARIO through it (package clientconf).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/clientconf"
)

// timeout bounds one scenario; the suite's own is longer.
const timeout = 2 * time.Minute

func main() {
	preflight := flag.String("preflight", "", "the preflight `BINARY` to start")
	flag.Parse()
	if *preflight == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: confclient -preflight BINARY SERVER-URL")
		os.Exit(2)
	}
	if err := run(*preflight, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
}

func run(preflight, url string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "confclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return clientconf.Run(ctx, preflight, dir, clientconf.Scenario{
		Name:     os.Getenv("MCP_CONFORMANCE_SCENARIO"),
		Protocol: os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"),
		Context:  os.Getenv("MCP_CONFORMANCE_CONTEXT"),
		Upstream: url,
	}, os.Stderr)
}
