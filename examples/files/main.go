// Command files serves seed 000's manage_files tool on a real directory,
// with tool resolution in both shapes: tools/list declares the worst case
// (destructive), and tools/resolve tells a client that a read is read-only
// and a delete destructive, before the call.
//
//	go run ./examples/files -root DIR               # stdio
//	go run ./examples/files -root DIR -http :8080   # streamable HTTP at /mcp, both protocol eras
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
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/resolve"
)

func main() {
	rootDir := flag.String("root", "", "directory the tool works in (required)")
	addr := flag.String("http", "", "serve streamable HTTP at ADDR/mcp instead of stdio")
	flag.Parse()
	if err := run(*rootDir, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "files:", err)
		os.Exit(1)
	}
}

func run(rootDir, addr string) error {
	if rootDir == "" {
		return fmt.Errorf("-root is required: the directory manage_files works in")
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	server := filetool.NewServer(root, &resolve.ServerOptions{Logger: logger})

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
