// Command fixture-server serves the conformance fixture (package
// conformance/fixture) over streamable HTTP at ADDR/mcp, both protocol eras
// on one URL, so that the official conformance suite can be run against it
// by hand:
//
//	go run ./conformance/cmd/fixture-server -http 127.0.0.1:3001
//	conformance server --url http://127.0.0.1:3001/mcp --requirements 2026-07-28
//
// See conformance/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"

	"github.com/preflightmcp/preflight/conformance/fixture"
	"github.com/preflightmcp/preflight/endpoint"
)

func main() {
	addr := flag.String("http", "127.0.0.1:3001", "serve streamable HTTP at ADDR/mcp")
	verbose := flag.Bool("v", false, "log how each request is routed")
	flag.Parse()
	if err := run(*addr, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "fixture-server:", err)
		os.Exit(1)
	}
}

func run(addr string, verbose bool) error {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String()+endpoint.Path)
	return endpoint.Serve(ctx, ln, endpoint.NewHandler(fixture.NewServer(logger), &endpoint.Options{Logger: logger}))
}
