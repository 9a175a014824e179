// Command filesd serves manage_files with progressive disclosure whose
// authorization state lives in Redis, so that several processes share it
// (in memory, per process, without -redis). The redisstore tests start two
// of them against one redis-server.
//
//	filesd -root DIR [-http 127.0.0.1:0] [-redis HOST:PORT [-redis-prefix P]]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway/internal/redisstore"
	"github.com/preflightmcp/preflight/resolve"
)

func main() {
	rootDir := flag.String("root", "", "directory the tool works in (required)")
	addr := flag.String("http", "127.0.0.1:0", "serve streamable HTTP at ADDR/mcp")
	redisAddr := flag.String("redis", "", "Redis at HOST:PORT; without it, state stays in this process")
	prefix := flag.String("redis-prefix", "", "key prefix (default "+redisstore.DefaultPrefix+")")
	flag.Parse()
	if err := run(*rootDir, *addr, *redisAddr, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "filesd:", err)
		os.Exit(1)
	}
}

func run(rootDir, addr, redisAddr, prefix string) error {
	if rootDir == "" {
		return fmt.Errorf("-root is required")
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := &disclose.Options{Logger: logger}
	if redisAddr != "" {
		client := redis.NewClient(&redis.Options{Addr: redisAddr})
		defer client.Close()
		if err := client.Ping(context.Background()).Err(); err != nil {
			return fmt.Errorf("-redis %s: %w", redisAddr, err)
		}
		opts.Store = redisstore.New(client, &redisstore.Options{Prefix: prefix})
	}
	server, _ := filetool.NewDisclosingServer(root, &resolve.ServerOptions{Logger: logger}, opts)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger.Info("serving", "url", "http://"+ln.Addr().String()+"/mcp", "root", rootDir)
	return endpoint.Serve(ctx, ln, endpoint.NewHandler(server, &endpoint.Options{Logger: logger}))
}
