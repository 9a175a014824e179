// Command folders serves a folder manager whose tools ask the user before
// they act, through resolvers: delete_folder confirms before deleting a
// folder with content, rename_folder asks for a name and then to confirm
// (a chain), describe_folder asks the client's model (sampling). Under
// 2026-07-28 the questions travel as input_required rounds with a sealed
// requestState; on legacy sessions as requests within the call.
//
//	go run ./examples/folders -root DIR               # stdio
//	go run ./examples/folders -root DIR -http :8080   # streamable HTTP at /mcp, both protocol eras
//
// PREFLIGHT_REQUEST_STATE_KEYS (id:base64secret,...; the first key seals,
// all open) shares the sealing keys between replicas; without it each
// process seals with a random key of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/requeststate"
)

func main() {
	rootDir := flag.String("root", "", "directory the tools work in (required)")
	addr := flag.String("http", "", "serve streamable HTTP at ADDR/mcp instead of stdio")
	flag.Parse()
	if err := run(*rootDir, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "folders:", err)
		os.Exit(1)
	}
}

func run(rootDir, addr string) error {
	if rootDir == "" {
		return fmt.Errorf("-root is required: the directory the tools work in")
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ring, err := requeststate.RingFromEnv("", nil)
	if err != nil {
		return err
	}
	opts := &inject.Options{Ring: ring, Logger: logger, Audience: "folders"}
	server := foldertool.NewServer(root, opts)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if addr == "" {
		return endpoint.ServeStdio(ctx, server)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String()+"/mcp", "root", rootDir)
	return endpoint.Serve(ctx, ln, endpoint.NewHandler(server, &endpoint.Options{Logger: logger}))
}
