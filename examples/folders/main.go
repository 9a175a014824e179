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
// Over HTTP, legacy (2025-11-25) sessions close after -session-timeout
// without a request and at most -max-sessions are open at once; a question
// asked within a legacy call waits at most -question-timeout.
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
	"time"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/requeststate"
)

func main() {
	rootDir := flag.String("root", "", "directory the tools work in (required)")
	addr := flag.String("http", "", "serve streamable HTTP at ADDR/mcp instead of stdio")
	var l limits
	flag.DurationVar(&l.sessionTimeout, "session-timeout", endpoint.DefaultSessionTimeout, "with -http: close a legacy (2025-11-25) session after this long without a request; negative: never")
	flag.IntVar(&l.maxSessions, "max-sessions", endpoint.DefaultMaxSessions, "with -http: most legacy sessions open at once, past which new ones get HTTP 503; negative: no cap")
	flag.DurationVar(&l.questionTimeout, "question-timeout", inject.DefaultQuestionTimeout, "how long a question asked within a legacy call waits for the client's answer")
	flag.Parse()
	if err := run(*rootDir, *addr, l); err != nil {
		fmt.Fprintln(os.Stderr, "folders:", err)
		os.Exit(1)
	}
}

// limits bound what a client can hold.
type limits struct {
	sessionTimeout, questionTimeout time.Duration
	maxSessions                     int
}

func run(rootDir, addr string, l limits) error {
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
	if l.questionTimeout <= 0 {
		return fmt.Errorf("-question-timeout %v: want a positive duration", l.questionTimeout)
	}
	opts := &inject.Options{Ring: ring, Logger: logger, Audience: "folders", QuestionTimeout: l.questionTimeout}
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
	return endpoint.Serve(ctx, ln, endpoint.NewHandler(server, &endpoint.Options{Logger: logger, SessionTimeout: l.sessionTimeout, MaxSessions: l.maxSessions}))
}
