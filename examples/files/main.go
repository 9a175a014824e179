// Command files serves seed 000's manage_files tool on a real directory,
// with tool resolution in both shapes: tools/list declares the worst case
// (destructive), and tools/resolve tells a client that a read is read-only
// and a delete destructive, before the call.
//
//	go run ./examples/files -root DIR               # stdio
//	go run ./examples/files -root DIR -http :8080   # streamable HTTP at /mcp, both protocol eras
//
// Over HTTP, legacy (2025-11-25) sessions close after -session-timeout
// without a request and at most -max-sessions are open at once.
//
// With -disclose, the tool is listed with a short description and an open
// input schema, and its full description is read from the
// tool_descriptions resource, which must be fetched before the first call
// (progressive disclosure, seed 004; package disclose):
//
//	go run ./examples/files -root DIR -http :8080 -disclose
//	go run ./examples/files -root DIR -disclose -descriptions DESCDIR               # DESCDIR/manage_files.json, reloaded on change
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/resolve"
)

func main() {
	rootDir := flag.String("root", "", "directory the tool works in (required)")
	addr := flag.String("http", "", "serve streamable HTTP at ADDR/mcp instead of stdio")
	var sf sessionFlags
	flag.DurationVar(&sf.timeout, "session-timeout", endpoint.DefaultSessionTimeout, "with -http: close a legacy (2025-11-25) session after this long without a request; negative: never")
	flag.IntVar(&sf.max, "max-sessions", endpoint.DefaultMaxSessions, "with -http: most legacy sessions open at once, past which new ones get HTTP 503; negative: no cap")
	var d discloseFlags
	flag.BoolVar(&d.on, "disclose", false, "progressive disclosure: list the tool minimally and require fetching its description from the tool_descriptions resource before calling it")
	flag.StringVar(&d.descriptions, "descriptions", "", "with -disclose: folder of full descriptions, one TOOL.json per tool, reloaded when a file changes")
	flag.StringVar(&d.schema, "schema", "object", "with -disclose: how far tools/list simplifies input schemas: object, open, toplevel or full")
	flag.Parse()
	if err := run(*rootDir, *addr, sf, d); err != nil {
		fmt.Fprintln(os.Stderr, "files:", err)
		os.Exit(1)
	}
}

// sessionFlags bound the legacy sessions of the HTTP endpoint.
type sessionFlags struct {
	timeout time.Duration
	max     int
}

// discloseFlags are the progressive-disclosure flags.
type discloseFlags struct {
	on                   bool
	descriptions, schema string
}

func run(rootDir, addr string, sf sessionFlags, d discloseFlags) error {
	if rootDir == "" {
		return fmt.Errorf("-root is required: the directory manage_files works in")
	}
	if !d.on && d.descriptions != "" {
		return fmt.Errorf("-descriptions needs -disclose")
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var server *mcp.Server
	if d.on {
		opts, closeAll, err := d.options(logger)
		if err != nil {
			return err
		}
		defer closeAll()
		server, _ = filetool.NewDisclosingServer(root, &resolve.ServerOptions{Logger: logger}, opts)
	} else {
		server = filetool.NewServer(root, &resolve.ServerOptions{Logger: logger})
	}

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
	return endpoint.Serve(ctx, ln, endpoint.NewHandler(server, &endpoint.Options{Logger: logger, SessionTimeout: sf.timeout, MaxSessions: sf.max}))
}

// options builds the disclosure options from the flags; closeAll releases
// the folder watcher.
func (d discloseFlags) options(logger *slog.Logger) (*disclose.Options, func(), error) {
	level, ok := disclose.ParseSchemaLevel(d.schema)
	if !ok {
		return nil, nil, fmt.Errorf("-schema %q: want open, object, toplevel or full", d.schema)
	}
	opts := &disclose.Options{Schema: level, Logger: logger}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	if d.descriptions != "" {
		dir, err := disclose.OpenDir(d.descriptions, &disclose.DirOptions{Logger: logger})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, func() { dir.Close() })
		opts.Source = dir
	}
	return opts, closeAll, nil
}
